"""Which release uv would take for a requirement that names no exact version, asked of
uv itself: ``uv pip compile --no-deps --format pylock.toml``, with the user's
environment, in the user's folder.

A reading of the indexes of wheelcuda's own would differ from uv's: uv honours
UV_CONSTRAINT, UV_EXCLUDE_NEWER, uv.toml's constraints, ``index-strategy`` and
``prerelease`` (with ``causal-conv1d<1.7`` as a constraint, uv takes 1.6.0, and a pin of
1.7.0 makes it fail as unsatisfiable), and ignores UV_NO_INDEX (uv 0.13.9 fetched
pypi.org/simple with it set). uv's answer is uv's rules.

``--no-deps`` resolves the one project from its index pages alone (checked, uv 0.13.9:
no sdist is downloaded or built, about 0.2 s), where ``uv pip install --dry-run``
unpacks the sdist to read its metadata. The lock names the files of the chosen release
that fit the target interpreter: wheels there mean uv installs one and builds nothing.
"""

from __future__ import annotations

import sys
import urllib.parse
from dataclasses import dataclass
from typing import Any

import tomlkit
from packaging.requirements import Requirement

from .. import _proc as proc
from .._context import Context
from ..errors import ToolError, WheelcudaError
from . import index


class NotOnIndex(WheelcudaError):
    """The installer answered: nothing it can install satisfies the requirement."""


class Unanswered(WheelcudaError):
    """The installer could not say (offline, an index that did not answer)."""


@dataclass(frozen=True)
class Release:
    """The release uv would take: ``spec`` pins it (extras kept)."""

    spec: str
    version: str
    where: str  # the host of its sdist, without credentials
    sha256: str | None  # its sdist's, for the wheel cache's key
    #: a wheel for the target interpreter: uv installs it and builds nothing
    wheel: bool


def _answer(text: str, req: Requirement) -> Release:
    try:
        lock: dict[str, Any] = tomlkit.parse(text).unwrap()
        [package] = lock["packages"]
        version = str(package["version"])
        sdist = package.get("sdist") or {}
        url = str(sdist.get("url") or sdist.get("path") or "")
        sha = (sdist.get("hashes") or {}).get("sha256")
    except (ValueError, KeyError, TypeError, AttributeError, tomlkit.exceptions.ParseError
            ) as exc:
        raise Unanswered(f"uv's answer could not be read ({exc})") from exc
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    return Release(f"{req.name}{extras}=={version}", version, _where(url),
                   str(sha) if sha else None, bool(package.get("wheels")))


def _where(url: str) -> str:
    """Where the sdist comes from, for people: the host, or the folder on this machine."""
    split = urllib.parse.urlsplit(url)
    if split.scheme in ("http", "https") and split.hostname:
        return split.hostname
    return index.shown(url.rsplit("/", 1)[0]) if url else "uv's indexes"


def by_uv(uv: tuple[str, ...], spec: str, python: tuple[int, int, int], ctx: Context
          ) -> Release:
    """The release ``uv pip install SPEC`` would take for a target interpreter of
    version ``python`` on this machine.
    Raises :class:`NotOnIndex` when uv finds none (it would fail the same way, later),
    :class:`Unanswered` when uv cannot say."""
    req = Requirement(spec)
    # uv resolves for the target's version on this machine's platform, through the
    # interpreter running this (uv needs one to start; the target's own is not asked)
    argv = [*uv, "pip", "compile", "-", "--no-deps", "--python", sys.executable,
            "--python-version", ".".join(map(str, python)), "--format", "pylock.toml",
            "--no-header", "--quiet"]
    try:
        text = proc.capture(argv, env=proc.child_environ(ctx.environ), timeout=120,
                            cwd=ctx.cwd, given=f"{spec}\n")
    except ToolError as exc:
        said = [line.strip() for line in str(exc).splitlines()[1:] if line.strip()]
        why = "; ".join(said) or str(exc)
        if any(s.startswith("error: No solution found") for s in said) and \
                not any("network was disabled" in s for s in said):
            raise NotOnIndex(f"uv finds no release to install for {spec}: {why}",
                             "check the name and the version (`uv pip install` would fail "
                             "the same way), the constraints uv reads (UV_CONSTRAINT, "
                             "uv.toml), or name the index it lives on (UV_INDEX)") from exc
        raise Unanswered(why) from exc
    return _answer(text, req)
