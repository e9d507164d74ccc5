"""Which torch a package's isolated build environment gets under uv, and from where.

uv-config's build dependency for a package is ``match-runtime`` (the torch the
environment or uv.lock resolves) when uv sees static metadata that requires torch, else
torch's exact version; torch comes from the index uv.lock took it from, else PyTorch's
index of its local label. Pure: the TOML edit that writes them is ``uvconfig.py``'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement

from ..errors import ConfigError
from .staticmeta import Form

__all__ = ["INDEX_NAME", "PYTORCH_INDEX", "match_runtime", "names_torch", "torch_entry",
           "torch_index"]


def match_runtime() -> dict[str, Any]:
    """The entry that gives the build environment the torch uv resolved for the runtime."""
    return {"requirement": "torch", "match-runtime": True}


#: PyTorch's own indexes, one per local label (``2.11.0+cu128`` is in ``.../whl/cu128``).
PYTORCH_INDEX = "https://download.pytorch.org/whl"
#: The name of the index entry wheelcuda writes (and --remove takes out).
INDEX_NAME = "wheelcuda-torch"
_PYPI_HOSTS = ("pypi.org", "files.pythonhosted.org")


def torch_entry(form: Form, version: str | None, name: str) -> tuple[str | dict[str, Any], str]:
    """The torch entry uv accepts for a package of ``form``, and why: ``match-runtime``
    only with static metadata that declares torch, else torch's exact ``version``
    (local label and all), which uv accepts for any package (docs/facts.md)."""
    if form.matches_runtime:
        return match_runtime(), f"static metadata that requires torch: {form.why}"
    why = form.why if form.static is not None else f"metadata not read: {form.why}"
    if form.static and not form.torch:
        why = f"torch is not among its requirements: {form.why}"
    if version is None:
        raise ConfigError(
            f"{name} needs torch's exact version in its build settings ({why}: uv refuses "
            "match-runtime for it), and only torch's CUDA is known (--cuda)",
            "run `uv lock` (or `uv sync`) first so that uv.lock pins torch, or install torch "
            "into the environment and give --python")
    return f"torch=={version}", why


def torch_index(version: str | None, locked: str | None) -> str | None:
    """Where uv must look for this torch inside a build environment: the index uv.lock
    took it from, else PyTorch's index of its local label; None for PyPI's."""
    if locked and not any(h in locked for h in _PYPI_HOSTS):
        return locked.rstrip("/")
    label = version.partition("+")[2] if version else ""
    if re.fullmatch(r"cu\d+|cpu|rocm[\d.]+|xpu", label):
        return f"{PYTORCH_INDEX}/{label}"
    return None


def names_torch(entry: object) -> bool:
    """Whether a build dependency entry (a requirement, or a table with one) is torch."""
    text = entry.get("requirement") if isinstance(entry, Mapping) else entry
    try:
        return Requirement(str(text)).name.lower() == "torch"
    except InvalidRequirement:
        return False
