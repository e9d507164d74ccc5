"""Sharing builds with a team: its settings and credentials, its package index (a
wheel labelled with its key, found, downloaded, checked, published), wheel variants that uv
picks by GPU, and a public index's prebuilt wheels. Each module is named by its layer
(``rules``, ``probe``, ``store``, or a name that begins with one); importing the package
imports nothing."""
