"""Toolkit sources: where a compiler set may come from. Each source is one package here
(its data, rules, probes and store beside its ``source`` module, each named by its layer);
:mod:`.table` lists them, :mod:`.base` is what they give, :mod:`.choice` what ``--toolkit``
allows. Importing this package imports nothing: its parts sit in every layer."""
