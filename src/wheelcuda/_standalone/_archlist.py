"""torch's GPU arch list read: one grammar for the command line (_rules/arch.py) and for
the programs in a tree (the nvcc wrapper reads ``WHEELCUDA_ARCHS``).

The syntax is torch's TORCH_CUDA_ARCH_LIST: ``8.0;9.0+PTX``, separated by ``;``, spaces
or commas; a suffix ``a`` or ``f`` (``9.0a``, ``12.0f``) selects the family-specific
targets; ``sm_90`` and ``90`` are read as ``9.0``; torch's names (``Ampere``, ``Hopper``,
``Blackwell``...) stand for their lists. An item that is none of these is refused, here
and in the wrapper alike, never skipped.

Standalone: copied into each tree's ``bin/`` beside the wrapper, so the standard library
alone.
"""

from __future__ import annotations

import re
from types import MappingProxyType

#: The names torch accepts in TORCH_CUDA_ARCH_LIST, and what each stands for
#: (``torch.utils.cpp_extension._get_cuda_arch_flags``, torch 2.14.1; combined names
#: first, since torch replaces them in this order).
NAMED = MappingProxyType({
    "Kepler+Tesla": "3.7",
    "Kepler": "3.5+PTX",
    "Maxwell+Tegra": "5.3",
    "Maxwell": "5.0;5.2+PTX",
    "Pascal": "6.0;6.1+PTX",
    "Volta+Tegra": "7.2",
    "Volta": "7.0+PTX",
    "Turing": "7.5+PTX",
    "Ampere+Tegra": "8.7",
    "Ampere": "8.0;8.6+PTX",
    "Ada": "8.9+PTX",
    "Hopper": "9.0+PTX",
    "Blackwell+Tegra": "11.0",
    "Blackwell": "10.0;10.3;12.0;12.1+PTX",
    "Rubin": "10.7+PTX",
})

#: (compiled when used: re.match caches it, and a compile's start pays for no other)
_ITEM = r"^(?:sm_)?(\d+)\.?(\d)?([af]?)(\+PTX)?$"


def expand_names(text: str) -> str:
    """torch's arch names replaced by what they stand for, as torch does."""
    for name, archs in NAMED.items():
        text = re.sub(rf"(?<![A-Za-z+]){re.escape(name)}(?![A-Za-z+])", archs, text)
    return text


def targets(text: str) -> list[tuple[int, int, str, bool]]:
    """Each target of the list, in its order: (major, minor, suffix, PTX too).
    ValueError, with the item, for the first item that is not a target."""
    out = []
    for item in re.split(r"[;,\s]+", expand_names(text).strip()):
        if not item:
            continue
        m = re.match(_ITEM, item, re.IGNORECASE)
        if m is None:
            raise ValueError(item)
        digits, minor, suffix, ptx = m.groups()
        if minor is None:  # "90", "sm_120": the last digit is the minor
            if len(digits) < 2:
                raise ValueError(item)
            digits, minor = digits[:-1], digits[-1]
        out.append((int(digits), int(minor), suffix.lower(), bool(ptx)))
    return out
