"""wheelcuda's toolkit store: compiler wheels fetched once, shared by every environment.

When an environment has torch but not the compiler wheels, ``wheelcuda install``
fetches the set matching torch's CUDA (torch's own ``cuda-toolkit==X`` pin) into
``<cache>/toolkits/<requirement>/`` with ``--target``, instead of into the user's
environment. The folder is laid out like site-packages, so :mod:`locate` reads it as
one more root, after the environment's own site folders.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import sys
import tempfile
from pathlib import Path

import filelock

from . import cache, catalog, installer, proc
from .errors import ComponentError, ToolError

_MARK = "wheelcuda-store.json"


def folder_name(specifier: str, machine: str | None = None) -> str:
    """``==13.0.3`` -> ``cuda-toolkit-13.0.3-x86_64``: per specifier and machine, since
    one home folder may serve x86_64 and aarch64 hosts (pure)."""
    spec = specifier.replace("==", "").replace("*", "x")
    safe = re.sub(r"[^A-Za-z0-9.+-]", "_", spec)
    return f"{catalog.METAPACKAGE}-{safe}-{machine or platform.machine()}"


def path_for(specifier: str) -> Path:
    return cache.cache_root() / "toolkits" / folder_name(specifier)


def existing(specifier: str) -> str | None:
    """The store folder for ``specifier`` if it was fetched whole."""
    path = path_for(specifier)
    return str(path) if (path / _MARK).is_file() else None


def _wheel_names(major: int) -> str:
    return ", ".join(c.wheels[major] for c in catalog.COMPILER)


def fetch(specifier: str, python: str, major: int) -> str:
    """Download and unpack the compiler set into the store (once; safe when concurrent)."""
    found = existing(specifier)
    if found:
        return found
    toolkits = cache.subdir("toolkits")
    final = toolkits / folder_name(specifier)
    try:
        lock = filelock.FileLock(str(toolkits / f".{final.name}.lock"), timeout=1800)
        lock.acquire()
    except filelock.Timeout as exc:
        raise ComponentError(f"another wheelcuda has been fetching into {final} for 30 min",
                             f"wait for it, or remove {toolkits}/.{final.name}.lock") from exc
    with lock:
        found = existing(specifier)
        if found:
            return found
        tmp = Path(tempfile.mkdtemp(dir=toolkits, prefix=f".fetch-{final.name}-"))
        try:
            _download(catalog.toolkit_requirements(specifier), tmp, python, major)
            mark = {"requirements": catalog.toolkit_requirements(specifier)}
            (tmp / _MARK).write_text(json.dumps(mark) + "\n")
            if final.exists():
                shutil.rmtree(final)
            os.rename(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return str(final)


def _download(requirements: list[str], target: Path, python: str, major: int) -> None:
    tool = installer.choose()
    argv = installer.target_argv(tool, requirements, str(target), python)
    requirement = requirements[0]
    quoted = " ".join(f'"{r}"' for r in requirements)
    print(f"wheelcuda: fetching {requirement} into {target.parent} with {tool.name}",
          file=sys.stderr)
    try:
        proc.capture(argv, timeout=1800)
    except ToolError as exc:
        if "certificate" in str(exc).lower():
            raise ComponentError(
                f"could not fetch {requirement}: the TLS certificate of the index was not "
                f"trusted: {exc}",
                "point uv at your CA bundle: export SSL_CERT_FILE=/etc/ssl/certs/"
                "ca-certificates.crt (or UV_NATIVE_TLS=1), then run wheelcuda again",
            ) from exc
        raise ComponentError(
            f"could not fetch {requirement} ({_wheel_names(major)}): {exc}",
            "when offline, bring the wheels: on a connected machine run "
            f"`pip download -d wheels {quoted}`, copy wheels/ here, then "
            f"`uv pip install --python {python} --no-index --find-links wheels {quoted}` "
            "(or set UV_FIND_LINKS=wheels and run wheelcuda again)",
        ) from exc
