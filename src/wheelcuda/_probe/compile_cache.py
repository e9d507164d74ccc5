"""The compile cache the tree's nvcc runs compiles through (WHEELCUDA_COMPILE_CACHE),
as doctor says it: the program, its version, and where sccache keeps what it compiled.
It reads only: ``sccache --version`` starts no server (``--show-stats`` would; install's
counts over a build are _commands/compile_counts.py)."""

from __future__ import annotations

import os
from typing import Any

from .. import _proc as proc
from .._context import Context
from .._standalone import _tree
from ..errors import ToolError

#: sccache's own variables that say where its cache lives (its remote stores among them);
#: their values are never shown (a remote store's may hold a key)
_STORES = ("SCCACHE_DIR", "SCCACHE_REDIS_ENDPOINT", "SCCACHE_REDIS",
           "SCCACHE_REDIS_CLUSTER_ENDPOINTS", "SCCACHE_WEBDAV_ENDPOINT",
           "SCCACHE_BUCKET", "SCCACHE_GCS_BUCKET", "SCCACHE_AZURE_CONNECTION_STRING",
           "SCCACHE_MEMCACHED_ENDPOINT", "SCCACHE_GHA_ENABLED")

#: sccache's variables that hold a credential: every build's setup.py sees the environment
#: uv and pip hand it, so a credential belongs in sccache's config file, which only the
#: sccache server reads (sccache's docs/Configuration.md: every store's keys have a
#: config-file twin)
_SECRETS = ("SCCACHE_WEBDAV_PASSWORD", "SCCACHE_WEBDAV_TOKEN", "SCCACHE_REDIS_PASSWORD",
            "SCCACHE_AZURE_CONNECTION_STRING", "SCCACHE_GCS_KEY_PATH",
            "SCCACHE_GCS_CREDENTIALS_URL", "SCCACHE_OSS_SECRET_ACCESS_KEY",
            "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


def _config_file(ctx: Context) -> str | None:
    """sccache's config file, as sccache finds it: SCCACHE_CONF, else
    ``$XDG_CONFIG_HOME/sccache/config`` (``~/.config`` without it); None when there is none.
    Only its path is read here, never what it holds."""
    named = ctx.get("SCCACHE_CONF")
    if named:
        return named
    base = ctx.get("XDG_CONFIG_HOME") or os.path.join(ctx.get("HOME") or "~", ".config")
    path = os.path.join(os.path.expanduser(base), "sccache", "config")
    return path if os.path.isfile(path) else None


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
            "stores": [v for v in _STORES if ctx.get(v)], "config": _config_file(ctx),
            "secrets": [v for v in dict.fromkeys((*_STORES, *_SECRETS))
                        if _secret(v, ctx.get(v))
                        and (not v.startswith("AWS_") or ctx.get("SCCACHE_BUCKET"))]}


def _secret(name: str, value: str | None) -> bool:
    """A credential: a variable that holds one, or a store address with a user:password
    in it (``redis://user:pw@host``) (pure)."""
    if not value:
        return False
    address = value.partition("://")[2] or value  # redis://u:pw@host, or u:pw@host
    return name in _SECRETS or "@" in address.partition("/")[0]

