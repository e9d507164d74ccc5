"""What the target must hold before install builds: whether anything may be built at
all (and so needs the build needs of ``--no-build-isolation``), the build requirements a
project declares that the target lacks, the command that brings the build needs, and
how ``--rebuild`` has each installer reinstall."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from ... import _pipeline as pipeline
from ..._probe import locate, setup_vars
from ..._probe.given import PackageArgs
from ..._rules import buildreqs, installer
from ..._rules.checks import Kind, Problem
from ...errors import WheelcudaError

if TYPE_CHECKING:
    from .plan import Prepared

#: Build requirements whose wheel is a program, which a system install on PATH serves too.
_PROGRAMS = ("cmake", "ninja")

def build_requirements_missing(r: pipeline.Resolved, sources: Sequence[str],
                               brought: Sequence[str] = ()) -> Problem | None:
    """What the local sources (folders, sdists) declare they need at build time that the
    target lacks (_rules/buildreqs.py): install builds without isolation, so nothing else
    would install it, and the build would fail in its own words. ``brought``: the build
    needs install installs first (:attr:`Prepared.brings`), not missing."""
    import shutil  # noqa: PLC0415 (only an install of local sources needs it)

    search = os.pathsep.join([os.path.dirname(r.target.python), r.ctx.get("PATH") or ""])

    def installed(name: str) -> str | None:
        if canonicalize_name(name) in brought:
            return "brought by install"
        # the cmake and ninja wheels are their programs: one on PATH does the same
        found = locate.installed_version(r.target.site_dirs, name)
        return found or ("on PATH" if name.lower() in _PROGRAMS and
                         shutil.which(name.lower(), path=search) else None)

    lacking: dict[str, list[str]] = {}
    for spec in sources:
        texts = [(found.text if (found := setup_vars.read_top_file(spec, f)) else None)
                 for f in ("setup.py", "pyproject.toml")]
        for req in buildreqs.missing(buildreqs.declared(*texts), installed, r.target.version):
            lacking.setdefault(str(req), []).append(os.path.basename(spec.rstrip("/")))
    if not lacking:
        return None
    said = "; ".join(f"{req} (for {', '.join(who)})" for req, who in lacking.items())
    return Problem(Kind.BUILD_NEEDS,
                   f"the build needs {said}, missing in {r.target.python}: install builds "
                   "with --no-build-isolation (so that it sees this environment's torch), "
                   "which installs no build requirement",
                   f"uv pip install --python {shlex.quote(r.target.python)} "
                   + " ".join(shlex.quote(req) for req in lacking))

#: Installer arguments after ``--`` that install what is installed already, or another
#: version of it: with one, a build may run whatever the target holds.
_REINSTALLING = re.compile(r"^(-U|--upgrade|--force-reinstall|--reinstall|"
                           r"--reinstall-package|--upgrade-package|-P|--refresh|"
                           r"--refresh-package|--no-binary)(=.*)?$")

def satisfied(site_dirs: Sequence[str], spec: str) -> bool:
    """Whether the target holds a release ``spec`` (a requirement: no folder, file or
    URL, no marker) allows, so that the installer builds nothing for it (uv says
    "Audited", pip "Requirement already satisfied")."""
    try:
        req = Requirement(spec)
    except InvalidRequirement:
        return False
    if req.url or req.marker:
        return False
    found = locate.installed_version(site_dirs, req.name)
    return found is not None and req.specifier.contains(found, prereleases=True)

def builds(site_dirs: Sequence[str], given: PackageArgs, specs: Sequence[str],
           extra: Sequence[str], *, from_cache: bool, rebuild: bool) -> bool:
    """Whether the install may build: not when every wheel comes from the wheel cache,
    nor when every package asked for is installed already (the installer would only
    audit it); always for ``--rebuild``, ``-e``, ``-r`` and a folder or a file (their
    content decides), and with an installer argument that reinstalls or upgrades."""
    if rebuild:
        return True
    if from_cache:
        return False
    if given.editable or given.requirements or any(_REINSTALLING.match(a) for a in extra):
        return True
    return not all(satisfied(site_dirs, s) for s in specs)

def reinstall_args(site_dirs: Sequence[str], tool: installer.Tool, given: PackageArgs,
                   specs: Sequence[str], names: Sequence[str | None]) -> list[str]:
    """The installer's arguments under which ``--rebuild`` reinstalls the packages asked
    for and nothing else: an installed release the request allows would be left as it
    is. uv has ``--reinstall-package`` (which implies ``--refresh-package``). pip's one
    switch, ``--force-reinstall``, reinstalls every dependency too (torch, from the
    index, in the key's empty cache), so it comes with ``--no-deps``, and only when
    every package asked for is installed already (their dependencies are then there);
    when none is, pip installs them anyway, as it reinstalls a project folder whatever
    is installed (seen with pip 23.2.1), and with ``-e`` or ``-r`` it is left to pip; a
    mix is refused."""
    unnamed = [s for s, n in zip(given.sources, names, strict=False) if not n]
    if unnamed:
        raise WheelcudaError(
            f"--rebuild: {unnamed[0]}: which package it builds is not known before the build, "
            "so the installer cannot be told to reinstall it",
            "name it: wheelcuda install --rebuild 'NAME @ URL' (a folder: give it a static "
            "[project] name in pyproject.toml)")
    if isinstance(tool, installer.Uv):
        return [w for n in names if n for w in ("--reinstall-package", n)]
    installed = [satisfied(site_dirs, s) for s in specs]
    if given.sources != tuple(specs) or not any(installed):
        return []
    if all(installed):
        return ["--force-reinstall", "--no-deps"]
    there = [s for s, done in zip(specs, installed, strict=True) if done]
    rest = [s for s, done in zip(specs, installed, strict=True) if not done]
    raise WheelcudaError(
        f"--rebuild with pip: {', '.join(there)} installed, {', '.join(rest)} not: pip "
        "reinstalls an installed package only with --force-reinstall, which reinstalls "
        "every dependency too (torch among them), and --no-deps would leave the others' "
        "dependencies out",
        f"rebuild the installed ones on their own: wheelcuda install --rebuild "
        f"{' '.join(shlex.quote(s) for s in there)}; then install the others")

#: The installer arguments after ``--`` that say where packages come from, taking a
#: value, and those that take none: the build needs install brings come from there too.
_WHERE = frozenset({"-i", "-f", "--index-url", "--extra-index-url", "--find-links",
                    "--index", "--default-index", "--index-strategy", "--trusted-host",
                    "--cert", "--keyring-provider", "--config-file"})

_WHERE_FLAGS = frozenset({"--no-index", "--offline", "--no-config", "--native-tls"})

def bring_argv(p: Prepared) -> list[str]:
    """How install installs the build needs it brings (:attr:`Prepared.brings`): the
    same installer, from where the arguments after ``--`` say packages come from,
    wheels only (no build backend runs to install a build need)."""
    where: list[str] = []
    rest = iter(p.extra)
    for arg in rest:
        if arg in _WHERE_FLAGS or ("=" in arg and arg.split("=", 1)[0] in _WHERE):
            where.append(arg)
        elif arg in _WHERE:
            where += [arg, next(rest, "")]
    return p.tool.install_argv(p.resolved.target.python, p.brings,
                               [*(w for w in where if w), "--only-binary", ":all:"])

