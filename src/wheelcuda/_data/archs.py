"""GPU architecture facts, as data.

- :data:`CUDA_FLOOR`: the oldest compute capability each CUDA major still builds for
  (CUDA 13 dropped Maxwell, Pascal and Volta: everything below 7.5).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

CUDA_FLOOR: Final = MappingProxyType({13: (7, 5), 12: (5, 0)})

#: Every compute capability some CUDA release builds for (nvcc 13.0.88's
#: ``--list-gpu-code``, and the ones CUDA 12 still builds below 7.5): an arch outside it
#: is a typo (``--arch 99.9``), which no other compiler would fix.
KNOWN: Final = frozenset({"50", "52", "53", "60", "61", "62", "70", "72", "75", "80", "86",
                          "87", "88", "89", "90", "100", "101", "103", "110", "120", "121"})
