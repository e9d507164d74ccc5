"""Run commands as on a machine with no CUDA toolkit.

This machine (and CI's) has a system CUDA in /usr/local/cuda and /usr/local/bin/nvcc.
A test that claims "no system toolkit" proves it: the environment is scrubbed
(no CUDA_HOME, CUDA_PATH, nothing of /usr/local on PATH) and, where we may (root),
``unshare -m`` mounts an empty tmpfs over /usr/local so nothing there can be used.
"""

from __future__ import annotations

import functools
import os
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

SCRUBBED_PATH = "/usr/bin:/bin"


@functools.cache
def can_hide() -> bool:
    """Whether ``unshare -m`` with a tmpfs over /usr/local works here (root does)."""
    try:
        done = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs none /usr/local"],
                              capture_output=True, check=False, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def scrubbed_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a scrubbed command gets: ``extra`` wins over what is taken from
    this process. The live check runs builds in threads while tests come and go, and the
    per-test fixture sets and removes WHEELCUDA_CACHE_DIR meanwhile (a build once read it
    in that gap: KeyError), so a value given in ``extra`` is never read from os.environ."""
    extra = dict(extra or {})
    env = {"PATH": SCRUBBED_PATH, "HOME": str(home), "LANG": "C.UTF-8",
           "WHEELCUDA_NO_GPU_PROBE": "1"}
    # TMPDIR: make live points it into its run's folder, so that pip's build environments
    # (5.2 GB each) go when the run's folder goes, even after a killed run
    for var in ("WHEELCUDA_CACHE_DIR", "PIP_CONFIG_FILE", "PIP_FIND_LINKS", "PIP_CERT",
                "PIP_DISABLE_PIP_VERSION_CHECK", "TMPDIR"):
        if var not in extra and (value := os.environ.get(var)) is not None:
            env[var] = value
    assert "WHEELCUDA_CACHE_DIR" in {**env, **extra}, "a scrubbed command needs its cache"
    env.update(extra)
    return env


def shell(script: str, home: Path, *, extra_env: Mapping[str, str] | None = None,
          timeout: float = 1200, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``script`` with sh, /usr/local hidden (when possible) and a scrubbed env.

    The script first proves the toolkit is out of reach when hiding works.
    """
    guard = "if [ -e /usr/local/cuda ]; then echo 'system toolkit visible' >&2; exit 99; fi\n"
    body = (guard if can_hide() else "") + script
    argv: Sequence[str] = ["sh", "-c", body]
    if can_hide():
        argv = ["unshare", "-m", "sh", "-c",
                "mount -t tmpfs none /usr/local && exec sh -c " + shlex.quote(body)]
    return subprocess.run(list(argv), capture_output=True, text=True, check=False,
                          env=scrubbed_env(home, extra_env), timeout=timeout, cwd=cwd)


def assert_ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout[-4000:]}\n" \
                                   f"{result.stderr[-6000:]}"
    return result.stdout


def assert_no_system_toolkit(text: str) -> None:
    """Nothing under /usr/local/cuda was used. The local source says where it looked
    ("none in CUDA_HOME, CUDA_PATH, /usr/local/cuda*, ..."): a glob, not a path used."""
    text = text.replace("/usr/local/cuda*", "(the usual folders)")
    assert "/usr/local/cuda" not in text, text[:2000]
