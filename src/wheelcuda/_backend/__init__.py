"""What the PEP 517/660 backend (:mod:`wheelcuda.build_meta`, which keeps the hooks and
their frame) decides: ``config`` (the config settings, the project's pyproject.toml, the
wrapped backend) and ``plan`` (torch, the compiler set to ask for, a build's variables)."""

__all__: list[str] = []
