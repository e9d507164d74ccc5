"""The host C++ compiler nvcc will run: found on PATH and asked its version.

Never raises: a compiler that is missing or does not answer comes back with the reason,
and the rule (:func:`wheelcuda._rules.hostcc.check_host_compiler`) decides.
"""

from __future__ import annotations

import functools
import os
import re
import shutil

from .. import _proc as proc
from .._context import Context
from .._rules.hostcc import banner_version, compiler_family, host_compiler_command
from .._values import HostCompiler
from ..errors import ToolError

_PROBE_TIMEOUT = 30.0


def probe_host_compiler(ctx: Context) -> HostCompiler:
    """The host compiler nvcc runs under ``ctx`` (see ``host_compiler_command``)."""
    return _probe(host_compiler_command(ctx.environ), ctx.get("PATH") or os.defpath,
                  _child_env(ctx))


def _child_env(ctx: Context) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(proc.child_environ(ctx.environ).items()))


@functools.cache
def _probe(command: str, path_var: str, env_items: tuple[tuple[str, str], ...]) -> HostCompiler:
    """Find ``command`` and ask it its family and version; never raises.

    Cached per command, PATH and environment: the compiler does not change while
    wheelcuda runs.
    """
    env = dict(env_items)
    path = _resolve(command, path_var)
    if path is None:
        return HostCompiler(command, None, "unknown", None, f"{command} not found on PATH")
    try:
        banner = proc.capture([path, "--version"], env=env, timeout=_PROBE_TIMEOUT)
    except ToolError as exc:
        return HostCompiler(command, path, "unknown", None, " ".join(str(exc).split()))
    family = compiler_family(banner)
    version = (_gcc_full_version(path, env) if family == "gcc" else None) or banner_version(banner)
    reason = None if version else f"no version in the output of `{command} --version`"
    return HostCompiler(command, path, family, version, reason)


def _resolve(command: str, path_var: str) -> str | None:
    """The executable nvcc runs for ``command``: a directory means its ``gcc``."""
    if os.path.isdir(command):
        command = os.path.join(command, "gcc")
    return shutil.which(command, path=path_var)


def _gcc_full_version(path: str, env: dict[str, str]) -> str | None:
    """``gcc -dumpfullversion`` (gcc >= 7): "12.2.0", whatever the vendor's banner says."""
    try:
        text = proc.capture([path, "-dumpfullversion"], env=env, timeout=_PROBE_TIMEOUT).strip()
    except ToolError:
        return None
    return text if re.fullmatch(r"\d+(\.\d+)*", text) else None
