"""GPU architecture facts, as data.

- :data:`NAMED`: the names torch accepts in TORCH_CUDA_ARCH_LIST, and what each stands
  for (``torch.utils.cpp_extension._get_cuda_arch_flags``, torch 2.14.1; combined names
  first, since torch replaces them in this order).
- :data:`CUDA_FLOOR`: the oldest compute capability each CUDA major still builds for
  (CUDA 13 dropped Maxwell, Pascal and Volta: everything below 7.5).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

NAMED: Final = MappingProxyType({
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

CUDA_FLOOR: Final = MappingProxyType({13: (7, 5), 12: (5, 0)})

#: Every compute capability some CUDA release builds for (nvcc 13.0.88's
#: ``--list-gpu-code``, and the ones CUDA 12 still builds below 7.5): an arch outside it
#: is a typo (``--arch 99.9``), which no other compiler would fix.
KNOWN: Final = frozenset({"50", "52", "53", "60", "61", "62", "70", "72", "75", "80", "86",
                          "87", "88", "89", "90", "100", "101", "103", "110", "120", "121"})
