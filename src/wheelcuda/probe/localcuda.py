"""CUDA toolkits already on this machine: where they are, which version, whether whole.

A toolkit already installed (NVIDIA's installer in ``/usr/local/cuda-12.8``, a
``CUDA_HOME``, a conda environment with ``cuda-nvcc``) can serve a build like the
wheels do: :mod:`wheelcuda.store.shims` presents it as a root laid out like
site-packages, and the rest of wheelcuda (locate, the tree, the wheel cache) cannot
tell it from wheels.

Candidates, in order, each with where it came from (:func:`candidate_paths`):
``CUDA_HOME``, ``CUDA_PATH``, ``/usr/local/cuda``, ``/usr/local/cuda-X.Y`` (newest
first), the folder above the ``nvcc`` on ``PATH``, ``CONDA_PREFIX``. A folder under
wheelcuda's own cache (its trees, whose ``bin/nvcc`` ``wheelcuda env`` puts on PATH) is
no toolkit and is skipped; a folder met twice (``/usr/local/cuda`` is a link to
``cuda-13.0``) is kept once, with its first origin.

Each candidate's version comes from ``version.json`` (``cuda_nvcc.version``, else
``cuda.version``) as NVIDIA's installers write it, else from ``bin/nvcc --version``.
Which candidate fits torch is a pure decision over these facts (:func:`fit`): torch
refuses another CUDA major and only warns on another minor, so the same major is
required, an exact major.minor preferred, then the newest of that major.

This module reads; it never writes (the shim is the store's).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from .. import proc
from ..context import Context
from ..data import catalog
from ..errors import ToolError
from ..rules.checks import parse_version, release
from .nvcc import _RELEASE  # one reading of nvcc's banner, shared with probe_nvcc

__all__ = ["CONDA_TOOLS", "Candidate", "Fit", "candidate_paths", "find", "fit", "probe",
           "summary"]

#: Origins, as they are shown to people.
CUDA_HOME, CUDA_PATH, USR_LOCAL_CUDA, PATH, CONDA = (
    "CUDA_HOME", "CUDA_PATH", "/usr/local/cuda", "nvcc on PATH", "CONDA_PREFIX")
#: The explicit origin: a folder the user named (``--toolkit PATH``).
GIVEN = "--toolkit"
#: Origins a person chose by setting them: listed even when they hold no nvcc, so
#: that what is wrong with them can be said.
_CHOSEN = frozenset({CUDA_HOME, CUDA_PATH, GIVEN})

_VERSIONED = re.compile(r"^cuda-(\d+)\.(\d+)$")

#: What a conda environment's ``bin`` holds of CUDA's: only these are taken from it
#: (that ``bin`` also holds python, pip and every other tool of the environment, which
#: must not shadow the target's on a tree's PATH).
CONDA_TOOLS: frozenset[str] = frozenset(
    {"nvcc", "nvcc.profile", "ptxas", "cudafe++", "fatbinary", "nvlink", "bin2c", "crt",
     "__nvcc_device_query", "nvdisasm", "cuobjdump", "nvprune", "cu++filt"}
    | {f.split("/", 1)[1] for c in catalog.COMPILER for m in catalog.MAJORS
       for f in c.files.get(m, ()) if f.startswith("bin/")})

#: Libraries a real toolkit has beyond the wheels' catalog files, that a build links:
#: nvcc links ``-lcudart_static`` by default, relocatable device code ``-lcudadevrt``.
_LINKED = ("lib/libcudart_static.a", "lib/libcudadevrt.a")
#: What must be there before nvcc is asked its version.
_ASK_NVCC = ("bin/nvcc", "bin/nvcc.profile", "nvvm/bin/cicc")


@dataclass(frozen=True)
class Candidate:
    """One toolkit folder, what it is, and the folders each part of it lives in."""

    #: The folder as found (``/usr/local/cuda``), and its resolved path.
    path: str
    real: str
    #: Where it was found: ``CUDA_HOME``, ``/usr/local/cuda``, ``nvcc on PATH``, ...
    origin: str
    #: nvcc's version (``13.0.88``), and where it was read: ``version.json`` or
    #: ``nvcc --version``; None when neither answered.
    version: str | None
    version_from: str
    #: ``cuda.version`` of version.json (``12.8.1``), when there is one.
    cuda: str | None
    #: Component versions from version.json (``cuda_cudart`` -> ``12.8.90``).
    versions: tuple[tuple[str, str], ...]
    #: Absolute folders of its parts: bin, include, lib (libcudart), nvvm.
    bin: str
    include: str
    lib: str
    nvvm: str
    #: A conda environment: its bin is shared with everything else installed there,
    #: and conda patches nvcc.profile (TOP under targets/).
    conda: bool
    #: Why it cannot build (files missing, no version); empty when it can.
    missing: tuple[str, ...]

    @property
    def release(self) -> str | None:
        """CUDA major.minor (``12.8``)."""
        return release(self.version)

    @property
    def major(self) -> int | None:
        return _major(self.version)

    @property
    def complete(self) -> bool:
        return not self.missing

    def component_version(self, name: str) -> str | None:
        """A compiler component's version: version.json's when it is of the same
        release (its parts are installed together), else nvcc's."""
        own = dict(self.versions).get(name)
        return own if own and release(own) == self.release else self.version

    def describe(self) -> str:
        shown = self.path if self.path == self.real else f"{self.path} (-> {self.real})"
        origin = "" if self.origin == self.path else f" ({self.origin})"
        return f"CUDA {self.version or '?'} in {shown}{origin}"


@dataclass(frozen=True)
class Fit:
    """Which candidate serves a torch built with CUDA ``wanted``, and why."""

    chosen: Candidate | None
    #: One line for people: why this one, or why none.
    why: str
    #: Every other candidate with the reason it was passed over.
    passed: tuple[tuple[Candidate, str], ...] = ()
    #: torch will warn (another minor version): worth saying.
    warning: str | None = None


def _major(version: str | None) -> int | None:
    parsed = parse_version(version)
    return parsed.major if parsed else None


def _under(path: str, folders: Sequence[str]) -> bool:
    real = os.path.realpath(path)
    for folder in folders:
        top = os.path.realpath(folder)
        if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
            return True
    return False


def _versioned(usr_local: str) -> list[str]:
    """``cuda-X.Y`` folders of ``usr_local``, newest first."""
    try:
        names = os.listdir(usr_local)
    except OSError:
        return []
    found = [(int(m.group(1)), int(m.group(2)), n) for n in names if (m := _VERSIONED.match(n))]
    return [os.path.join(usr_local, n) for _, _, n in sorted(found, reverse=True)]


def candidate_paths(ctx: Context, *, skip: Sequence[str] = (), usr_local: str = "/usr/local"
                    ) -> list[tuple[str, str]]:
    """``(origin, folder)`` in order of preference, less those under ``skip`` (wheelcuda's
    cache) and those met before (by resolved path). Reads only names and links."""
    out: list[tuple[str, str]] = []
    for var in (CUDA_HOME, CUDA_PATH):
        value = (ctx.get(var) or "").strip()
        if value:
            out.append((var, value))
    if os.path.isdir(os.path.join(usr_local, "cuda")):
        out.append((USR_LOCAL_CUDA, os.path.join(usr_local, "cuda")))
    out += [("/usr/local/cuda-X.Y", p) for p in _versioned(usr_local)]
    nvcc = shutil.which("nvcc", path=ctx.get("PATH") or "")
    if nvcc:
        out.append((PATH, os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))))
    conda = (ctx.get("CONDA_PREFIX") or "").strip()
    if conda:
        out.append((CONDA, conda))
    seen: set[str] = set()
    kept = []
    for origin, given in out:
        path = os.path.abspath(os.path.expanduser(given))
        real = os.path.realpath(path)
        if real in seen or _under(path, skip):
            continue
        seen.add(real)
        kept.append((origin, path))
    return kept


def _read_version_json(path: str) -> dict[str, str]:
    """``name -> version`` of NVIDIA's version.json; empty when absent or unreadable."""
    try:
        with open(os.path.join(path, "version.json"), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: str(v["version"]) for k, v in data.items()
            if isinstance(v, dict) and isinstance(v.get("version"), str)}


def _first_dir(*paths: str) -> str:
    return next((p for p in paths if os.path.isdir(p)), paths[-1])


def _required(major: int | None) -> list[tuple[str, str]]:
    """``(part, relative path)`` of what a whole compiler set holds (the catalog's files
    for ``major``, less the parts' folder names, plus the libraries builds link)."""
    if major not in catalog.MAJORS:
        return []
    files = dict.fromkeys(f for c in catalog.COMPILER for f in c.files[major])
    files.update(dict.fromkeys(_LINKED))
    return [(f.split("/", 1)[0], f.split("/", 1)[1]) for f in files]


def probe(path: str, origin: str, ctx: Context,
          nvcc_version: Callable[[str, Context], str | None] | None = None) -> Candidate:
    """What the toolkit folder ``path`` is (version, parts, completeness)."""
    real = os.path.realpath(path)
    conda = os.path.isdir(os.path.join(real, "conda-meta")) or origin == CONDA
    target = os.path.join(real, "targets", catalog.target_dir())
    bin_dir = os.path.join(real, "bin")
    include = _first_dir(os.path.join(target, "include"), os.path.join(real, "include"))
    lib = _first_dir(os.path.join(target, "lib"), os.path.join(real, "lib64"),
                     os.path.join(real, "lib"))
    nvvm = os.path.join(real, "nvvm")
    info = _read_version_json(real)
    version, version_from = info.get(catalog.NVCC.name) or info.get("cuda"), "version.json"
    # nvcc is asked only where the parts every major needs are there: a folder that
    # only holds an nvcc (``/usr/local`` above a wrapper script) costs no process.
    if version is None and all(os.path.isfile(os.path.join(real, f)) for f in _ASK_NVCC):
        version = (nvcc_version or _nvcc_version)(os.path.join(bin_dir, "nvcc"), ctx)
        version_from = "nvcc --version"
    if version is None:
        version_from = ""
    major = _major(version)
    where = {"bin": bin_dir, "include": include, "lib": lib, "nvvm": nvvm}
    missing: list[str] = []
    if not os.path.isdir(real):
        missing.append("the folder itself (it is not a folder)")
    elif version is None:
        missing += [f for f in _ASK_NVCC if not os.path.isfile(os.path.join(real, f))] or [
            "a version (no version.json, and `bin/nvcc --version` did not answer)"]
    elif major not in catalog.MAJORS:
        missing.append(f"a CUDA major wheelcuda knows (this is CUDA {version})")
    for part, rel in _required(major):
        full = os.path.join(where[part], rel)
        shown = os.path.relpath(full, real)
        if not os.path.exists(full) and shown not in missing:
            missing.append(shown)
    versions = tuple(sorted((k, v) for k, v in info.items() if k != "cuda"))
    return Candidate(path, real, origin, version, version_from, info.get("cuda"), versions,
                     bin_dir, include, lib, nvvm, conda, tuple(missing))


def _nvcc_version(nvcc: str, ctx: Context) -> str | None:
    """``nvcc --version``'s ``V13.0.88`` (one process, as probe/nvcc.py reads it)."""
    env = proc.child_environ(ctx.environ)
    for var in ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"):
        env.pop(var, None)
    try:
        m = _RELEASE.search(proc.capture([nvcc, "--version"], env=env, timeout=30))
    except ToolError:
        return None
    return m.group(2) if m else None


def find(ctx: Context, *, skip: Sequence[str] = (), usr_local: str = "/usr/local",
         given: str | None = None) -> list[Candidate]:
    """Every toolkit candidate on this machine, in order (:func:`candidate_paths`), or
    only ``given`` (``--toolkit PATH``). A folder found by searching is listed when it
    holds ``bin/nvcc``; one a person set (CUDA_HOME, CUDA_PATH) when it exists; a given
    one always, so that what is wrong with it can be said."""
    pairs = [(GIVEN, given)] if given else candidate_paths(ctx, skip=skip, usr_local=usr_local)
    out = []
    for origin, path in pairs:
        if not os.path.isdir(path) and origin != GIVEN:
            continue
        if origin not in _CHOSEN and not os.path.isfile(os.path.join(path, "bin", "nvcc")):
            continue
        out.append(probe(path, origin, ctx))
    return out


def _key(version: str | None) -> tuple[int, ...]:
    parsed = parse_version(version)
    return parsed.release if parsed else ()


def fit(candidates: Sequence[Candidate], wanted: str | None, *, older: bool = True) -> Fit:
    """The candidate for a torch built with CUDA ``wanted`` (``12.8``; None: torch's
    CUDA unknown, the first whole one). ``older``: a toolkit of an older minor than
    torch's may serve (``--toolkit local``); `auto` says no, since NVIDIA's archives of
    torch's own release then fit better (12.4 cannot build sm_120, 12.8 can). Pure:
    decides over the facts gathered."""
    passed: dict[int, str] = {}
    usable = []
    for i, c in enumerate(candidates):
        if c.missing:
            passed[i] = f"incomplete: {', '.join(c.missing)} missing"
        else:
            usable.append((i, c))
    chosen: tuple[int, Candidate] | None = None
    why, warning = "", None
    wanted_major = _major(wanted)
    if wanted is None or wanted_major is None:
        chosen = usable[0] if usable else None
        why = "torch's CUDA is unknown: the first whole toolkit"
    else:
        same = _same_major(usable, wanted, passed, older=older)
        exact = [(i, c) for i, c in same if c.release == release(wanted)]
        if exact:
            chosen = exact[0]
            why = f"CUDA {chosen[1].release}, as torch's"
        elif same:
            chosen = max(same, key=lambda ic: (_key(ic[1].version), -ic[0]))
            why = f"the newest CUDA {wanted_major} here (torch is built with {wanted})"
            warning = (f"torch is built with CUDA {wanted}, the local toolkit is CUDA "
                       f"{chosen[1].release}: torch warns about another minor version")
        for i, c in same:
            if chosen is not None and i != chosen[0]:
                passed[i] = f"CUDA {c.release}: {chosen[1].describe()} fits better"
    rest = tuple((candidates[i], passed[i]) for i in sorted(passed))
    if chosen is None:
        return Fit(None, _none_fits(candidates, wanted, rest), rest)
    return Fit(chosen[1], f"{chosen[1].describe()}: {why}", rest, warning)


def _same_major(usable: list[tuple[int, Candidate]], wanted: str,
                passed: dict[int, str], *, older: bool) -> list[tuple[int, Candidate]]:
    """The candidates of torch's major (of its minor or newer unless ``older``); why each
    other is passed goes into ``passed``."""
    same = []
    for i, c in usable:
        if c.major != _major(wanted):
            passed[i] = (f"CUDA {c.release}, torch is built with CUDA {wanted}: torch "
                         "refuses another major version")
        elif not older and _key(c.release) < _key(release(wanted)):
            passed[i] = (f"CUDA {c.release} is older than torch's {wanted}: NVIDIA's "
                         f"archives of {wanted} fit better (--toolkit local takes it)")
        else:
            same.append((i, c))
    return same


def _none_fits(candidates: Sequence[Candidate], wanted: str | None,
               passed: tuple[tuple[Candidate, str], ...]) -> str:
    need = f"torch's CUDA {wanted}" if wanted else "a build"
    if not candidates:
        return (f"no local CUDA toolkit for {need}: none in CUDA_HOME, CUDA_PATH, "
                "/usr/local/cuda*, the nvcc on PATH or CONDA_PREFIX")
    lines = "; ".join(f"{c.describe()}: {reason}" for c, reason in passed)
    return f"no local CUDA toolkit fits {need}: {lines}"


def summary(fit_: Fit) -> Mapping[str, object]:
    """The decision as plain data (doctor's JSON)."""
    def one(c: Candidate) -> dict[str, object]:
        return {"path": c.path, "real": c.real, "origin": c.origin, "version": c.version,
                "version_from": c.version_from, "complete": c.complete,
                "missing": list(c.missing)}
    return {"chosen": one(fit_.chosen) if fit_.chosen else None, "why": fit_.why,
            "warning": fit_.warning,
            "passed": [{**one(c), "reason": r} for c, r in fit_.passed]}
