"""What ``wheelcuda install`` was given to install: the packages, the ``-e`` folders and
the ``-r`` files, checked, and what the files name (nested ``-r`` files followed).

It reads the user's files and writes nothing; a folder or file that cannot serve raises
with the fix before anything else is looked at.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from .._context import Context
from .._rules import installer
from ..errors import WheelcudaError


@dataclass(frozen=True)
class PackageArgs:
    """What to install, as given: the packages, ``-e`` folders and ``-r`` files, and
    what the files name (nested ``-r`` files followed), with every file read."""

    specs: tuple[str, ...]
    editable: tuple[str, ...] = ()
    requirements: tuple[str, ...] = ()
    listed: tuple[str, ...] = ()  # the requirements and -e targets the files name
    files: tuple[str, ...] = ()  # every requirements file read, nested ones too

    @property
    def sources(self) -> tuple[str, ...]:
        """Every package source, in the order given (one per name)."""
        return (*self.specs, *self.editable, *self.listed)

    @property
    def cacheable(self) -> bool:
        """Whether the wheel cache may serve and keep this install's wheels: not with
        -e (the install leads back into the folder, whose files change after it) nor
        with -r (the file names what it likes, pinned or not, and other files)."""
        return not (self.editable or self.requirements)


def read_package_args(ctx: Context, specs: Sequence[str], editable: Sequence[str] = (),
               requirements: Sequence[str] = ()) -> PackageArgs:
    """Check ``-e`` folders and ``-r`` files, and read what the files name; raises with
    the fix before anything else is looked at."""
    folders = tuple(_editable(ctx, d) for d in editable)
    listed: list[str] = []
    files: list[str] = []
    for name in requirements:
        _requirements(ctx, name, None, listed, files)
    return PackageArgs(tuple(specs), folders, tuple(requirements), tuple(listed), tuple(files))


def _editable(ctx: Context, folder: str) -> str:
    """The folder as the installers take it (a bare relative name gets ``./``: uv reads
    ``-e ext`` as a package name)."""
    path = os.path.join(ctx.cwd, folder)
    fix = ("give the folder of a Python project (the one that holds pyproject.toml or "
           "setup.py), e.g. wheelcuda install -e ./my_ext; for a VCS URL, clone it first")
    if not os.path.exists(path):
        raise WheelcudaError(f"-e {folder}: there is no such folder ({os.path.abspath(path)})",
                             fix)
    if not os.path.isdir(path):
        raise WheelcudaError(f"-e {folder}: that is a file; -e takes a project folder",
                             f"install an sdist or a wheel without -e: wheelcuda install "
                             f"{shlex.quote(folder)}")
    if not any(os.path.isfile(os.path.join(path, n))
               for n in ("pyproject.toml", "setup.py", "setup.cfg")):
        raise WheelcudaError(f"-e {folder}: that folder holds no pyproject.toml, setup.py or "
                             "setup.cfg: it is not a Python project", fix)
    if os.path.isabs(folder) or folder.startswith("."):
        return folder
    return f"./{folder}"


def _requirements(ctx: Context, name: str, parent: str | None, listed: list[str],
                  files: list[str]) -> None:
    """Read one requirements file into ``listed`` (and ``files``); a nested ``-r`` is
    relative to the file that names it, as pip and uv read it."""
    path = os.path.join(os.path.dirname(parent) if parent else ctx.cwd, name)
    where = f"-r {name}" + (f" (named in {parent})" if parent else "")
    fix = ("give the path of a requirements file (one requirement a line, as pip and uv "
           "read it), e.g. wheelcuda install -r requirements.txt")
    if os.path.isdir(path):
        raise WheelcudaError(f"{where}: that is a folder, not a requirements file",
                             f"give the file inside it, e.g. -r "
                             f"{shlex.quote(os.path.join(name, 'requirements.txt'))}")
    if os.path.abspath(path) in map(os.path.abspath, files):
        return  # named twice, or a loop: read once
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        raise WheelcudaError(f"{where}: there is no such file ({os.path.abspath(path)})",
                             fix) from None
    except OSError as exc:
        raise WheelcudaError(f"{where}: cannot read it: {exc.strerror or exc}", fix) from exc
    files.append(path)
    for kind, value in installer.requirement_lines(text):
        if kind == "-r":
            _requirements(ctx, value, path, listed, files)
        else:
            listed.append(value)
