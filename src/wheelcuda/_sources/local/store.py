"""A local toolkit dressed as wheels: a folder of links laid out like site-packages.

wheelcuda's tree, its checks and its wheel cache all start from roots laid out like
site-packages (:mod:`wheelcuda._probe.locate`). A toolkit already on the machine
(:mod:`wheelcuda._sources.local.probe`) is presented the same way, by a *shim* in
``<cache>/local/cuda<X.Y>-<hash>/``: the catalog's component folders holding links
into the toolkit (nothing copied), and a minimal ``.dist-info/METADATA`` per component
wheel (name and version), so that ``locate.locate([shim])`` finds every compiler
component with its version, and the tree links from the shim as it does from wheels.

CUDA 13 (one folder, as the wheels): ``nvidia/cu13/{bin/, include, lib/, nvvm}``.
CUDA 12 (one folder per wheel): ``nvidia/cuda_nvcc/{bin/, include/crt, nvvm}``,
``nvidia/cuda_runtime/{include/, lib/}``, ``nvidia/cuda_cccl/include/{cub,thrust,...}``:
the toolkit's one ``include`` is split between them, each entry in one folder only, so
the tree's union of the three is the toolkit's ``include`` again.

``bin/`` and ``lib/`` are real folders of one link per entry: ``lib`` leaves out the
toolkit's ``stubs/`` (the tree writes its own driver stub at ``lib64/stubs/libcuda.so``,
which must never land in the toolkit through a link), and a conda environment's ``bin``
gives only CUDA's tools (not its python), with NVIDIA's stock ``nvcc.profile`` in place
of conda's patched one (whose ``TOP`` is under ``targets/``, where a tree has no nvvm).

The shim is built beside its place and renamed in under a lock (:mod:`.fs`); one whose
plan changed (the toolkit's listing) or whose links went stale is rebuilt; a toolkit
of another version (or another folder) gets another shim.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..._data import catalog
from ..._rules import tree as plan_rules
from ..._store import fs
from ..._store.layout import Layout
from ...errors import ComponentError
from ..redist import rules as redist_rules
from .probe import CONDA_TOOLS
from .rules import Candidate

#: The shim's manifest: what it was built from, and the digest of its plan.
MARK = "wheelcuda-shim.json"
#: Bump when the shim's layout changes: old shims are then rebuilt.
FORMAT = 1
_LOCK_TIMEOUT = 120.0

#: nvcc.profile as NVIDIA ships it (``TOP`` is the folder above ``bin``: the tree), CUDA
#: 13's (this machine's /usr/local/cuda-13.0 and the wheels': one text). Written in
#: place of conda's patched one.
_PROFILE_13 = """
TOP              = $(_HERE_)/..

CICC_PATH        = $(TOP)/nvvm/bin
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice

LD_LIBRARY_PATH += $(TOP)/lib:
PATH            += $(CICC_PATH):$(_HERE_):

INCLUDES        +=  "-I$(TOP)/$(_TARGET_DIR_)/include" $(_SPACE_)
{cccl}
LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/$(_TARGET_DIR_)/lib$(_TARGET_SIZE_)/stubs" \
"-L$(TOP)/$(_TARGET_DIR_)/lib$(_TARGET_SIZE_)"

CUDAFE_FLAGS    +=
PTXAS_FLAGS     +=
""".replace("\\\n", "")
_CCCL_LINE = 'SYSTEM_INCLUDES +=  "-isystem" "$(TOP)/$(_TARGET_DIR_)/include/cccl" $(_SPACE_)\n'
#: CUDA 12.x's, as conda-forge's patch of it shows it.
_PROFILE_12 = """
TOP              = $(_HERE_)/..

NVVMIR_LIBRARY_DIR = $(TOP)/$(_NVVM_BRANCH_)/libdevice

LD_LIBRARY_PATH += $(TOP)/lib:
PATH            += $(TOP)/$(_NVVM_BRANCH_)/bin:$(_HERE_):

INCLUDES        +=  "-I$(TOP)/$(_TARGET_DIR_)/include" $(_SPACE_)

LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/$(_TARGET_DIR_)/lib$(_TARGET_SIZE_)/stubs" \
"-L$(TOP)/$(_TARGET_DIR_)/lib$(_TARGET_SIZE_)"

CUDAFE_FLAGS    +=
PTXAS_FLAGS     +=
""".replace("\\\n", "")
STOCK_PROFILES = {13: _PROFILE_13.format(cccl=_CCCL_LINE), 12: _PROFILE_12}


@dataclass(frozen=True)
class ShimPlan:
    """What one shim holds (pure data)."""

    name: str
    major: int
    #: (path relative to the shim, absolute target)
    links: tuple[tuple[str, str], ...]
    #: (path relative to the shim, text): the dist-info files, a stock nvcc.profile
    files: tuple[tuple[str, str], ...]

    @property
    def digest(self) -> str:
        blob = json.dumps([FORMAT, self.major, self.links, self.files])
        return hashlib.sha256(blob.encode()).hexdigest()


def shim_name(c: Candidate) -> str:
    """``cuda12.8-<hash>``: one shim per toolkit folder (resolved) and version (pure)."""
    blob = json.dumps([FORMAT, c.real, c.version, c.cuda, c.conda, catalog.target_dir()])
    return f"cuda{c.release or 'x'}-{hashlib.sha256(blob.encode()).hexdigest()[:16]}"


def _parts(major: int) -> dict[str, list[str]]:
    """Component folder -> the toolkit parts (bin, include, lib, nvvm) it must hold,
    from the catalog's files."""
    out: dict[str, list[str]] = {}
    for c in catalog.COMPILER:
        parts = out.setdefault(c.folders[major], [])
        for f in c.files[major]:
            part = f.split("/", 1)[0]
            if part not in parts:
                parts.append(part)
    return out


def _include_owner(major: int) -> dict[str, str]:
    """First entry of ``include/`` a component's files name -> that component's folder
    (``crt`` -> nvidia/cuda_nvcc, ``cub`` -> nvidia/cuda_cccl): used where a toolkit's
    one ``include`` is split between several folders."""
    owner: dict[str, str] = {}
    for c in catalog.COMPILER:
        for f in c.files[major]:
            if f.startswith("include/"):
                owner.setdefault(f.split("/")[1], c.folders[major])
    return owner


#: CUDA C++ Core Libraries' folders, kept together in the cccl component's folder.
_CCCL_NAMES = frozenset({"cub", "thrust", "cuda", "nv", "cccl"})


def _dist_info(name: str, version: str) -> tuple[str, str]:
    return (f"{redist_rules.dist_info(name, version)}/METADATA",
            redist_rules.metadata_text(name, version, "a local CUDA toolkit, linked by wheelcuda"))


def _bin(c: Candidate, folder: str, major: int, listdir: plan_rules.Listdir
         ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``bin/``: a link per entry (a conda environment's: CUDA's tools only, and the
    stock nvcc.profile as a file)."""
    links, files = [], []
    for name, _ in sorted(listdir(c.bin) or ()):
        if c.conda and name not in CONDA_TOOLS:
            continue
        if c.conda and name == "nvcc.profile":
            files.append((f"{folder}/bin/{name}", STOCK_PROFILES[major]))
        else:
            links.append((f"{folder}/bin/{name}", os.path.join(c.bin, name)))
    return links, files


def _split(src: str, part: str, folder: str, sharing: list[str], *, major: int,
           listdir: plan_rules.Listdir) -> list[tuple[str, str]]:
    """``folder``'s share of a part several component folders hold (CUDA 12's include):
    each entry goes to the folder whose component names it, CCCL's to cccl's, the rest
    to the runtime's."""
    owner = _include_owner(major)
    runtime, cccl = catalog.RUNTIME.folders[major], catalog.CCCL.folders[major]
    links = []
    for name, _ in sorted(listdir(src) or ()):
        home = owner.get(name) or (cccl if name in _CCCL_NAMES else runtime)
        if home not in sharing:
            home = sharing[0]
        if home == folder:
            links.append((f"{folder}/{part}/{name}", os.path.join(src, name)))
    return links


def _dist_infos(c: Candidate, major: int) -> list[tuple[str, str]]:
    """One METADATA per compiler wheel name (CUDA 12's nvcc wheel holds three parts),
    and the metapackage's with the toolkit's CUDA version when version.json gives it."""
    files, seen = [], set()
    for comp in catalog.COMPILER:
        wheel, version = comp.wheels[major], c.component_version(comp.name)
        if wheel not in seen and version:
            seen.add(wheel)
            files.append(_dist_info(wheel, version))
    if c.cuda:
        files.append(_dist_info(catalog.METAPACKAGE, c.cuda))
    return files


def plan_shim(c: Candidate, listdir: plan_rules.Listdir) -> ShimPlan:
    """The shim for a whole candidate (pure once ``listdir`` answers)."""
    major = c.major
    if major not in catalog.MAJORS or c.version is None:
        raise ValueError(f"not a toolkit wheelcuda knows: {c.describe()}")
    sources = {"bin": c.bin, "include": c.include, "lib": c.lib, "nvvm": c.nvvm}
    parts = _parts(major)
    sharing = {p: [f for f, ps in parts.items() if p in ps] for p in sources}
    links: list[tuple[str, str]] = []
    files: list[tuple[str, str]] = []
    for folder, needed in parts.items():
        for part in needed:
            src = sources[part]
            if part == "bin":
                more, texts = _bin(c, folder, major, listdir)
                links += more
                files += texts
            elif part == "lib":  # never stubs/: the tree writes its own stub there
                links += [(f"{folder}/lib/{name}", os.path.join(src, name))
                          for name, _ in sorted(listdir(src) or ()) if name != "stubs"]
            elif len(sharing[part]) == 1:
                links.append((f"{folder}/{part}", src))
            else:
                links += _split(src, part, folder, sharing[part], major=major, listdir=listdir)
    return ShimPlan(shim_name(c), major, tuple(links), tuple(files + _dist_infos(c, major)))


def folder(layout: Layout, c: Candidate) -> Path:
    return layout.local / shim_name(c)


def read_valid(path: Path, plan: ShimPlan) -> bool:
    """The shim at ``path`` is whole, of this plan, and every link resolves."""
    try:
        manifest = json.loads((path / MARK).read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(manifest, dict) or manifest.get("plan") != plan.digest:
        return False
    return (all(os.path.exists(path / rel) for rel, _ in plan.links)
            and all(os.path.isfile(path / rel) for rel, _ in plan.files))


def problem(path: Path) -> str | None:
    """Why the shim at ``path`` can no longer be used (``cache prune``), or None: never
    finished, its toolkit gone (uninstalled, moved), or a link that leads nowhere."""
    try:
        manifest = json.loads((path / MARK).read_text())
        toolkit = str(manifest["toolkit"])
    except (OSError, ValueError, KeyError, TypeError):
        return "never finished"
    if not os.path.isdir(toolkit):
        return f"the toolkit {toolkit} is gone"
    return fs.dangling_link(path)


def existing(layout: Layout, c: Candidate) -> Path | None:
    """The shim for ``c`` when it is there and current (reads only)."""
    try:
        plan = plan_shim(c, plan_rules.os_listdir)
    except ValueError:
        return None
    path = layout.local / plan.name
    return path if read_valid(path, plan) else None


def write_plan(tmp: Path, plan: ShimPlan, executables: frozenset[str] = frozenset()) -> None:
    """The plan's links and files into ``tmp`` (the folder :func:`fs.build` swaps in);
    ``executables``: files to mark executable."""
    for rel, target in plan.links:
        dest = tmp / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, dest)
    for rel, text in plan.files:
        dest = tmp / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text)
        if rel in executables:
            dest.chmod(0o755)


def _write(tmp: Path, plan: ShimPlan, c: Candidate) -> None:
    write_plan(tmp, plan)
    manifest = {"format": FORMAT, "plan": plan.digest, "toolkit": c.real, "path": c.path,
                "origin": c.origin, "version": c.version, "version_from": c.version_from,
                "cuda": c.cuda}
    (tmp / MARK).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def ensure(layout: Layout, c: Candidate) -> Path:
    """The shim root for the whole toolkit ``c``, built if missing or stale (safe when
    concurrent; milliseconds: links only); for a layout that only looks
    (:attr:`Layout.scratch`), the cache's when current, else one built in the scratch."""
    if not c.complete:
        raise ComponentError(f"{c.describe()} is incomplete: {', '.join(c.missing)} missing",
                             "point CUDA_HOME at a whole CUDA toolkit, or let wheelcuda use "
                             "the CUDA wheels (--toolkit wheels)")
    try:
        plan = plan_shim(c, plan_rules.os_listdir)
    except ValueError as exc:
        raise ComponentError(str(exc)) from exc
    if read_valid(layout.local / plan.name, plan):
        return layout.local / plan.name
    layout = layout.writable()  # a run that only looks links in its scratch folder
    return install(layout, plan, lambda tmp: _write(tmp, plan, c),
                   what=f"linking the toolkit {c.real}", called="the toolkit's shim")


def install(layout: Layout, plan: ShimPlan, write: Callable[[Path], None], *, what: str,
            called: str) -> Path:
    """``layout.local/plan.name`` made by ``write`` unless it is there and current: under
    its lock, checked again once held (two runs link once); ``what`` names the wait,
    ``called`` the folder in errors. Every folder of links in ``local/`` comes this way
    (a local toolkit's shim, the clang toolkit's folder)."""
    parent = layout.private(layout.local)
    final = parent / plan.name
    if read_valid(final, plan):
        return final
    with fs.locked(layout.lock(parent, plan.name), what, _LOCK_TIMEOUT):
        if read_valid(final, plan):
            return final
        fs.build(parent, plan.name, write, called)
    return final

