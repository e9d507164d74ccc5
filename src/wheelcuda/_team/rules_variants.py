"""What a shared wheel says of itself as a wheel variant (PEP 825), so that uv picks it by
the machine's GPU (pure).

A team's build holds machine code for the archs it was pruned to and needs a driver for
torch's CUDA; uv's built-in NVIDIA provider reads both from the machine (`sm_arch`,
`cuda_version_lower_bound`). uv has no provider for torch: what holds a wheel to the torch
it was built against is its version's local label (the share key, torch among its fields)
and a ``Requires-Dist: torch==<exact>``. Checked with uv 0.13.9 (docs/facts.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._rules import arch as archmod
from ..errors import ArchError, WheelcudaError

__all__ = ["NAMESPACE", "PROVIDER_API", "PROVIDER_REQUIRES", "VariantError", "properties",
           "torch_pin"]

#: The namespace of uv's built-in NVIDIA provider.
NAMESPACE = "nvidia"
#: The only provider entry uv 0.13.9 takes as its built-in NVIDIA one: another floor
#: (0.0.2 or more), ``builtin``, ``optional`` or a marker is skipped as unsupported, and
#: the wheel with it.
PROVIDER_REQUIRES = "nvidia-variant-provider>=0.0.1,<1.0.0"
PROVIDER_API = "nvidia_variant_provider.plugin:NvidiaVariantPlugin"

_FIX = ("publish a wheel that `wheelcuda install` built and kept (`wheelcuda cache list` "
        "shows them), or one `wheelcuda publish` labelled")


class VariantError(WheelcudaError):
    """A wheel whose key does not say what a variant needs (archs, torch, its CUDA)."""


def _sm_arch(text: str) -> list[str]:
    """``9.0;12.0+PTX`` -> ``["90_real", "120_real"]``: one value per arch whose SASS the
    wheel holds. uv takes a wheel when any value fits the GPU (a 9.0 machine takes
    ``["90_real", "120_real"]``), and ``N_real`` for a GPU of N's major and a minor at
    least N's. A family-specific build (``9.0a``, ``12.0f``) keeps its suffix
    (``90a_real``): uv 0.13.9 gives such values to no GPU, so the wheel is never taken
    where its code might not run (sm_120a SASS does not run on a 12.1 GPU)."""
    try:
        archs = archmod.parse(text)
    except ArchError as exc:
        raise VariantError(f"its key's archs {text!r} cannot be read: {exc.message}",
                           _FIX) from None
    return [f"{a.number}_real" for a in archs]


def properties(fields: Mapping[str, Any]) -> list[str]:
    """The variant properties of a wheel built under the share key ``fields``, in
    variantlib's ``namespace :: feature :: value`` form: the SASS archs, and the driver
    CUDA torch's build needs (``cuda_version_lower_bound``, torch's major.minor: a
    cu128 build's kernels do not load on a 12.6 driver)."""
    archs, cuda = fields.get("archs"), fields.get("torch_cuda")
    if not isinstance(archs, str) or not archs.strip():
        raise VariantError("its key names no GPU archs", _FIX)
    if not fields.get("prune", True):
        raise VariantError("it was built with --all-archs: its key does not say which GPUs "
                           "it holds code for", "publish a build pruned to its archs "
                           "(`wheelcuda install PKG --arch 12.0`)")
    found = re.match(r"^(\d+)\.(\d+)", cuda) if isinstance(cuda, str) else None
    if found is None:
        raise VariantError(f"its key names no CUDA version for torch ({cuda!r})", _FIX)
    return [*(f"{NAMESPACE} :: sm_arch :: {v}" for v in _sm_arch(archs)),
            f"{NAMESPACE} :: cuda_version_lower_bound :: {int(found[1])}.{int(found[2])}"]


def torch_pin(fields: Mapping[str, Any]) -> str:
    """``torch===2.10.0``: the requirement that holds the wheel to the torch distribution
    it was built against, by the version installers know it by (``torch_dist``): PyPI's
    torch 2.10.0 calls itself ``2.10.0+cu128`` and is ``2.10.0`` to uv, so ``==2.10.0+cu128``
    could never be met there, and ``==2.10.0`` would also take PyTorch's index's
    ``2.10.0+cu130``. ``===`` is the exact string (PEP 440's arbitrary equality; uv 0.13.9
    takes it). A key from before ``torch_dist`` was recorded pins ``==`` what torch calls
    itself (local label included)."""
    dist = fields.get("torch_dist")
    if isinstance(dist, str) and dist.strip():
        return f"torch==={dist.strip()}"
    torch = fields.get("torch")
    if not isinstance(torch, str) or not torch.strip():
        raise VariantError("its key names no torch version", _FIX)
    return f"torch=={torch.strip()}"
