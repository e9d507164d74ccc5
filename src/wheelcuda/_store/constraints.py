"""The build constraints file ``wheelcuda env`` exports: written once per content.

Installers read build constraints from a file (``UV_BUILD_CONSTRAINT``,
``PIP_BUILD_CONSTRAINT``), and a shell that evaluated ``env`` names that file for as
long as it lives: so the file is named by its content (``<sha256 prefix>.txt`` in the
cache's ``constraints`` folder), never rewritten with another, and kept by prune (a few
hundred bytes each).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ..errors import CacheError
from . import fs
from .layout import Layout


def write(layout: Layout, text: str) -> Path:
    """The file holding ``text`` (written when it is not there yet); its path."""
    folder = layout.private(layout.constraints)
    path = folder / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.txt"
    try:
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            fs.write_text(path, text)
    except OSError as exc:
        raise CacheError(f"cannot write the build constraints {path}: {exc.strerror or exc}",
                         f"make {folder} writable, or point WHEELCUDA_CACHE_DIR elsewhere"
                         ) from exc
    return path
