"""The installers as strategies, with their argument lists (pure);
:mod:`wheelcuda._probe.installer` finds one.

uv is what our users run: ``uv pip install --no-build-isolation --python TARGET``.
Without uv, ``TARGET -m pip install --no-build-isolation`` (pip installs into the
interpreter it runs in).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal


@dataclass(frozen=True)
class Tool:
    """An installer, as a strategy (after pypa/build's ``env.py``): how to start it, the
    argument lists it takes, and what it does beside installing. :class:`Uv` and
    :class:`Pip` are the two; the probe (:mod:`wheelcuda._probe.installer`) picks one."""

    #: how to start it; empty for pip (the target's own python runs it)
    command: tuple[str, ...] = ()
    name: ClassVar[Literal["uv", "pip"]]
    #: it holds ``<venv>/.lock`` for a whole install and waits for it in silence (uv
    #: does; pip takes no such lock), so a wait for it is worth saying
    locks_environment: ClassVar[bool] = False

    def install_argv(self, python: str, packages: Sequence[str], extra: Sequence[str], *,
                     editable: Sequence[str] = (), requirements: Sequence[str] = ()
                     ) -> list[str]:
        """``--no-build-isolation`` so the build uses the environment's own torch (pure).
        ``editable`` folders and ``requirements`` files go as pip and uv take them
        (``-e DIR``, ``-r FILE``), before ``extra`` (the arguments after ``--``)."""
        given = [*packages, *(w for d in editable for w in ("-e", d)),
                 *(w for f in requirements for w in ("-r", f))]
        return [*self._pip(python), "install", "--no-build-isolation", *self._python(python),
                *given, *extra]

    def target_argv(self, requirements: Sequence[str], target: str, python: str) -> list[str]:
        """Install ``requirements`` into a plain folder (the toolkit store) (pure); not
        quiet: what the installer says streams to the user during the long download.
        Wheels only (``--only-binary :all:``): NVIDIA publishes every part as a wheel,
        and a compiler fetch must never run a build backend from an index."""
        return [*self._pip(python), "install", *self._quiet_target(), "--only-binary",
                ":all:", "--target", target, *self._python(python), *requirements]

    def cache_prune_argv(self) -> list[str] | None:
        """After an install, what drops the installer's downloads and sources from the
        key's own cache but keeps the wheels it built; None when nothing needs to."""
        return None

    def _pip(self, python: str) -> list[str]:
        raise NotImplementedError

    def _python(self, python: str) -> list[str]:  # noqa: ARG002 (uv's takes it)
        return []

    def _quiet_target(self) -> list[str]:
        return []


@dataclass(frozen=True)
class Uv(Tool):
    """``uv pip install --python TARGET``: what our users run."""

    name: ClassVar[Literal["uv", "pip"]] = "uv"
    locks_environment: ClassVar[bool] = True

    def cache_prune_argv(self) -> list[str]:
        # --ci keeps the wheels uv built, drops downloads and unpacked sources
        return [*self.command, "cache", "prune", "--ci"]

    def _pip(self, python: str) -> list[str]:  # noqa: ARG002 (--python says it)
        return [*self.command, "pip"]

    def _python(self, python: str) -> list[str]:
        return ["--python", python]


@dataclass(frozen=True)
class Pip(Tool):
    """``TARGET -m pip install``: pip installs into the interpreter it runs in, which has
    pip where wheelcuda's own may not (a uv tool venv has none)."""

    name: ClassVar[Literal["uv", "pip"]] = "pip"

    def _pip(self, python: str) -> list[str]:
        return [python, "-m", "pip"]

    def _quiet_target(self) -> list[str]:
        return ["--disable-pip-version-check", "--no-warn-script-location"]


#: The options of a requirements file that name more to install.
_NAMING = {"-e": "-e", "--editable": "-e", "-r": "-r", "--requirement": "-r"}


def requirement_lines(text: str) -> list[tuple[str, str]]:
    """What a requirements file names, as pip and uv read it (pure): ``("", spec)`` for a
    requirement, ``("-e", target)`` for an editable one, ``("-r", file)`` for a nested
    file (relative to the file that names it); comments, blank lines and every other
    option (-c, --index-url...) left out. A line ending in a backslash goes on."""
    out: list[tuple[str, str]] = []
    for raw in re.sub(r"\\\r?\n", " ", text).splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not line:
            continue
        if not line.startswith("-"):
            # a requirement's own options (--hash=..., --config-settings ...) follow it
            out.append(("", re.split(r"\s+--?[A-Za-z]", line, maxsplit=1)[0]))
            continue
        # -e DIR, -e=DIR, -eDIR (optparse's forms), --editable DIR, --editable=DIR
        m = re.match(r"(-[A-Za-z]|--[A-Za-z-]+)(?:\s*=\s*|\s+)?(.*)$", line)
        if m and m.group(1) in _NAMING and m.group(2).strip():
            out.append((_NAMING[m.group(1)], m.group(2).strip()))
    return out
