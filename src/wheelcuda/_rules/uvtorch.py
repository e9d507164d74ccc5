"""Which torch a package's isolated build environment gets under uv, and from where.

uv-config's build dependency for a package is torch's exact version (the environment's,
else uv.lock's), local label and all: uv takes it for any package (docs/facts.md).
``match-runtime`` (the torch uv resolves for the runtime) is written only when torch's
version is not known (``--cuda``): uv refuses it for a package without static metadata
that requires torch, or when torch is not in the resolution (``uv pip install X
--no-deps``; torchsort failed so), and it follows a new torch that the settings' build key
does not name, so the exact version is taken wherever there is one. torch comes from the
index uv.lock took it from, else PyTorch's index of its local label. Pure: the TOML edit
that writes them is ``uvconfig.py``'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement


def match_runtime() -> dict[str, Any]:
    """The entry that gives the build environment the torch uv resolved for the runtime."""
    return {"requirement": "torch", "match-runtime": True}


#: PyTorch's own indexes, one per local label (``2.11.0+cu128`` is in ``.../whl/cu128``).
PYTORCH_INDEX = "https://download.pytorch.org/whl"
#: The name of the index entry wheelcuda writes (and --remove takes out).
INDEX_NAME = "wheelcuda-torch"
_PYPI_HOSTS = ("pypi.org", "files.pythonhosted.org")


def torch_entry(version: str | None) -> tuple[str | dict[str, Any], str]:
    """The torch entry for a package's build environment, and why (pure)."""
    if version is None:
        return match_runtime(), ("only torch's CUDA is known (--cuda): uv takes match-runtime "
                                 "only for a package with static metadata that requires "
                                 "torch; run uv-config again after `uv lock` to pin it")
    return f"torch=={version}", "torch's exact version, which uv takes for any package"


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
