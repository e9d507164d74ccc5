"""The compile cache the tree's nvcc runs compiles through (WHEELCUDA_COMPILE_CACHE),
as doctor says it: the program, its version, and where sccache keeps what it compiled.
It reads only: ``sccache --version`` starts no server (``--show-stats`` would)."""

from __future__ import annotations

from typing import Any

from .. import _proc as proc
from .._context import Context
from .._standalone import _tree
from ..errors import ToolError

#: sccache's own variables that say where its cache lives (its remote stores among them);
#: their values are never shown (a remote store's may hold a key)
_STORES = ("SCCACHE_DIR", "SCCACHE_REDIS_ENDPOINT", "SCCACHE_WEBDAV_ENDPOINT",
           "SCCACHE_BUCKET", "SCCACHE_GCS_BUCKET", "SCCACHE_AZURE_CONNECTION_STRING",
           "SCCACHE_MEMCACHED_ENDPOINT", "SCCACHE_GHA_ENABLED")


def find(ctx: Context) -> dict[str, Any] | None:
    """The compile cache as configured (None: off): the setting, the program it names
    (None: not found), its version, and which of sccache's store variables are set."""
    value, program = _tree.compile_cache(ctx.environ)
    if not value:
        return None
    version = None
    if program is not None:
        try:
            version = proc.capture([program, "--version"], env=proc.child_environ(ctx.environ),
                                   timeout=10).strip()
        except ToolError:
            version = None
    return {"setting": value, "program": program, "version": version,
            "stores": [v for v in _STORES if ctx.get(v)]}
