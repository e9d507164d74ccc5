"""What one run resolved (:class:`Resolved`): read by every command, and the locks a
build through it holds on what it uses from the cache."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from .._context import Context
from .._probe import torch as torch_probe
from .._rules import arch as archmod
from .._rules import checks, cxxstd, environ
from .._rules import installer as installer_rules
from .._rules import tree as plan
from .._rules.checks import Kind, Problem
from .._sources.clang.rules import Clang
from .._sources.table import Asked, Choice, Fetch, Source
from .._store import fs
from .._store.layout import Layout
from .._store.trees import Home
from .._team import rules_key as sharekey
from .._values import HostCompiler, Target, Torch
from . import fetchplan
from .request import (
    Request,
)
from .toolkit import (
    Toolkit,
)


@dataclass(frozen=True)
class Resolved:
    """Everything a command needs, computed once."""

    ctx: Context
    request: Request
    layout: Layout
    target: Target
    torch: Torch | None
    toolkit: Toolkit
    archs: tuple[archmod.Arch, ...]
    arch_source: str | None
    host: HostCompiler
    tree: plan.TreePlan | None
    home: Home | None
    problems: tuple[Problem, ...] = field(default=())
    #: ``CUDA_HOME=/opt/cuda`` when the user set a toolkit other than our tree.
    other_cuda_home: str | None = None
    #: The installer, chosen once (install and fetch; None when not asked or unusable).
    installer: installer_rules.Tool | None = None
    #: Where the compiler set may come from (``--toolkit``).
    choice: Choice = field(default_factory=Choice)
    #: The clang the clang toolkit would use, for a CUDA 12 torch when allowed.
    clang: Clang | None = None
    #: What a fetch would still bring for the compiler (decided once: fetchplan.py).
    fetch: Fetch = field(default_factory=Fetch)

    @property
    def home_cached(self) -> bool:
        """The tree is the cache's (not one a run that only looks made in its scratch)."""
        scratch = self.layout.scratch
        return self.home is not None and (scratch is None
                                          or not self.home.path.is_relative_to(scratch))

    @property
    def compiler(self) -> str:
        """The compiler as the wheel cache's key names it: the tree's, else the one a
        fetch would bring when that is known before it (fetchplan.py)."""
        if self.home is not None:
            return self.home.compiler
        return self.fetch.compiler or "(not fetched)"

    @property
    def shared_compiler(self) -> str | None:
        """The compiler as a key that travels to a team's index names it
        (:func:`wheelcuda._team.rules_key.compiler_release`): the tree's, else what a
        fetch would bring, else the compiler wheels' nvcc, else torch's CUDA release
        (machine B may have no compiler yet: that is what it would fetch). One answer
        for install and the backend, in which a clang build is never an nvcc build's."""
        release = checks.compiler_release(self.toolkit.inventory, self.toolkit.major) \
            or (self.torch.cuda if self.torch is not None else None)
        if self.home is not None:
            found: str | None = self.home.compiler or self.home.nvcc_release
        elif self.fetch.compiler:
            found = self.fetch.compiler
        elif self.toolkit.by_clang and self.clang is not None:
            # no tree (the backend keys before it builds one): the clang and the ptxas
            # of the CUDA 12 wheels, as the tree's banner would say
            found = f"clang {self.clang.version} + ptxas {release}"
        else:
            found = release
        return sharekey.compiler_release(found) if found else None

    @property
    def compiler_wheels(self) -> bool:
        """The CUDA wheels would bring the compiler: torch's CUDA has compiler wheels and
        the choice allows them (the backend then asks the frontend for them)."""
        return fetchplan.wheels_hold_compiler(self.torch) and self.choice.store_wheels

    def asked(self, source: Source) -> Asked:
        """Whom ``source``'s words about its fetch are for in this run (doctor,
        ``--no-fetch``); only with torch (nothing is to fetch without it)."""
        assert self.torch is not None
        return Asked(self.torch, self.target.python, named=self.choice.only == (source.name,),
                     manifest=self.request.redist_manifest, clang=self.clang)

    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.is_error]

    def blocking(self, *, fetching: bool) -> list[Problem]:
        """The errors that stop a build: all of them, less those the fetch :attr:`fetch`
        fixes when it is to run first (``fetching``: doctor and ``install --explain``
        answer for a build that fetches by itself)."""
        return self.fetch.left(self.errors()) if fetching else self.errors()

    def raise_first(self, *, ignore: tuple[Kind, ...] = ()) -> None:
        """Raise the first error (less the ``ignore`` kinds) as its
        :class:`WheelcudaError`, if there is one."""
        for p in self.problems:
            if p.is_error and p.kind not in ignore:
                raise p.error()

    @property
    def cxx_std(self) -> int | None:
        """The C++ standard builds are raised to: torch's headers' (_rules/cxxstd.py),
        unless WHEELCUDA_CXX_STD says otherwise; None: each build's own."""
        if self.home is not None and any(c.isspace() for c in str(self.home.path)):
            return None  # CXX is split on whitespace: no shim at such a path
        known = torch_probe.cxx_standard(self.torch) if self.torch is not None else None
        return cxxstd.wanted(known, self.ctx.environ)

    def variables(self) -> dict[str, str]:
        """What ``wheelcuda env`` exports (after :meth:`raise_first`)."""
        assert self.home is not None, "raise_first() first"
        return environ.build_environ(str(self.home.path), self.archs, self.ctx.environ,
                                     str(self.layout.homes), all_archs=self.request.all_archs,
                                     cxx_std=self.cxx_std)

    def run_variables(self) -> dict[str, str]:
        """:meth:`variables` with the target's bin after the tree's (its ninja and
        console scripts, as if it were activated): for install and run."""
        variables = self.variables()
        target_bin = os.path.dirname(self.target.python)
        parts = variables["PATH"].split(os.pathsep)
        if target_bin not in parts:
            parts.insert(1, target_bin)
        variables["PATH"] = os.pathsep.join(parts)
        return variables

def in_use_locks(r: Resolved) -> list[Path]:
    """The lock files of what a build through ``r`` uses from the cache: its tree, and
    the store's toolkits and local-toolkit links the tree leads into."""
    locks = [r.layout.lock(r.layout.homes, r.home.path.name)] if r.home else []
    for root in r.toolkit.inventory.roots:
        for parent in (r.layout.toolkits, r.layout.local):
            try:
                first = Path(root).relative_to(parent).parts[0]
            except (ValueError, IndexError):
                continue
            locks.append(r.layout.lock(parent, first))
    return sorted(set(locks))

def in_use(r: Resolved) -> contextlib.AbstractContextManager[list[int]]:
    """Shared locks on :func:`in_use_locks` for the length of a build or ``run``:
    ``cache clear`` and ``prune`` skip what they guard (a tree removed under a running
    build leaves it with ``nvcc: not found``). Yields their file descriptors, for the
    child to hold too (``proc.call(keep_fds=...)``)."""
    return fs.shared(in_use_locks(r), "in use by a build")
