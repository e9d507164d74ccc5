"""The variables a build needs, for a tree and an arch list (pure).

- CUDA_HOME and CUDA_PATH: torch.utils.cpp_extension reads CUDA_HOME, then CUDA_PATH,
  at import; CMake's FindCUDAToolkit and many setup.py files read them too.
- PATH with the tree's ``bin`` first: builds that run plain ``nvcc``. Earlier wheelcuda
  trees are dropped from PATH, so running ``env`` twice does not grow it.
- CUDACXX: how CMake's ``enable_language(CUDA)`` finds the compiler.
- TORCH_CUDA_ARCH_LIST (torch) and CUDAARCHS (CMake's default CMAKE_CUDA_ARCHITECTURES).
- WHEELCUDA_ARCHS / WHEELCUDA_ALL_ARCHS: what the tree's nvcc wrapper prunes to.
- WHEELCUDA_CXX_STD, CXX (the tree's host shim) and WHEELCUDA_REAL_CXX: a build that
  names an older C++ standard than torch's headers need is raised to it, and its host
  compiles wait for their turn in the machine's compile budget.

What an isolated build environment needs beyond them (:func:`isolated`), which ``env``
exports too: installers read build constraints and the packages' switches from the
environment, but make a build environment of their own, with the newest torch the index
has (2.15.0+cu132 against a cu12.8 tree, seen) unless told otherwise.

- UV_BUILD_CONSTRAINT and PIP_BUILD_CONSTRAINT (space-separated files, both: pip splits
  the value of an option it may take twice; pip >= 25.3): torch pinned to the target's.
  The user's own files are kept, first; ours comes last, once.
- The recipe table's switches (CAUSAL_CONV1D_FORCE_BUILD=TRUE: else its setup.py fetches
  a wheel from GitHub and dies offline) where the user set none, and its arch variables
  (FLASH_ATTN_CUDA_ARCHS), which follow the arch list as TORCH_CUDA_ARCH_LIST does.
- A torch from PyTorch's own index (``2.11.0+cu128``) is found in a build environment
  only there: PIP_EXTRA_INDEX_URL gets it, after the user's own (pip takes the best
  version of each package over all its indexes; the next env replaces it), unless the
  user's own value names it already: then env adds nothing and claims nothing, so that
  no later env takes the user's entry out. uv gets no
  variable for it: an index in UV_INDEX comes before PyPI for every package, and uv takes
  each from the first index that has it, so the setuptools and requests of PyTorch's
  index would be every later uv command's (setuptools 70 there, where builds need 77);
  uv-config scopes that index to torch instead (buildplan.py says so).

A constraints file whose path holds whitespace is named by its ``file://`` URL: uv splits
these variables on spaces and pip on any whitespace, quotes included (uv 0.10.0 and
0.13.9 read ``"/a b/c.txt"`` as the files ``"/a`` and ``b/c.txt"``; pip 25.3 and 26.3
likewise), and both read ``file:///a%20b/c.txt`` as the file ``/a b/c.txt``.

What env exports lasts as long as the shell, whichever environment is active later:
:func:`exports` keeps a record (RECORD_VAR) of the environment the exports were made for
and of each variable env set, with a digest of its value and the value it replaced, as
Lmod's and Spack's ``unload`` keep theirs. A later env puts back what the earlier one set
and it does not set again (a venv without torch gets no constraints: the old torch's go);
``env --unset`` (:func:`undo`) puts everything back. Either way a value the user changed
after env stays theirs, and of a list (PATH, the constraints, the extra indexes) only
env's own entries go.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from urllib.parse import quote, unquote, urlsplit

from .._data import settings as registry
from . import arch as archmod
from . import cxxstd

#: Where uv and pip read build constraints from the environment.
BUILD_CONSTRAINT_VARS = ("UV_BUILD_CONSTRAINT", "PIP_BUILD_CONSTRAINT")
PIP_INDEX_VAR = "PIP_EXTRA_INDEX_URL"
#: Which index env added to PIP_EXTRA_INDEX_URL, so that the next env replaces it.
ENV_INDEX_VAR = registry.ENV_INDEX.name
#: What env set in this shell, and for which environment (:class:`Record`).
RECORD_VAR = registry.ENV_SET.name
#: Variables env adds entries to (PATH, the constraints, the extra indexes) or keeps its
#: own books in: never recorded whole, since the user's entries in them are theirs.
_OWN_ENTRIES = ("PATH", *BUILD_CONSTRAINT_VARS, PIP_INDEX_VAR, ENV_INDEX_VAR, RECORD_VAR)
#: POSIX sh's ``name`` (render.py refuses others): a record edited by hand names no other.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def clean_path(path: str, bin_dir: str, homes_dir: str) -> str:
    """``bin_dir`` first, then ``path`` without any wheelcuda tree's bin (pure)."""
    return os.pathsep.join([bin_dir, *(p for p in _without_trees(path, homes_dir).split(
        os.pathsep) if p and p != bin_dir)])


def _without_trees(path: str, homes_dir: str) -> str:
    """``path`` without any wheelcuda tree's bin (pure)."""
    prefix = homes_dir.rstrip("/") + "/"
    return os.pathsep.join(p for p in path.split(os.pathsep) if not p.startswith(prefix))


def build_environ(home: str, archs: Sequence[archmod.Arch], current: Mapping[str, str],
                  homes_dir: str, *, all_archs: bool = False,
                  cxx_std: int | None = None) -> dict[str, str]:
    """The variables ``wheelcuda env`` exports, in the order it prints them; with
    ``cxx_std``, what raises a build's C++ standard to it (_rules/cxxstd.py)."""
    bin_dir = os.path.join(home, "bin")
    variables = {
        "CUDA_HOME": home,
        "CUDA_PATH": home,
        "CUDACXX": os.path.join(bin_dir, "nvcc"),
        "PATH": clean_path(current.get("PATH", os.defpath), bin_dir, homes_dir),
    }
    if archs:
        variables["TORCH_CUDA_ARCH_LIST"] = archmod.to_torch(archs)
        variables["CUDAARCHS"] = archmod.to_cmake(archs)
        # Read by the tree's nvcc wrapper: every nvcc call builds exactly these archs,
        # whatever -gencode list the package hard-coded (causal-conv1d's nine
        # targets ignore TORCH_CUDA_ARCH_LIST). --all-archs keeps it.
        variables[registry.ARCHS.name] = archmod.to_torch(archs)
        variables[registry.ALL_ARCHS.name] = "1" if all_archs else "0"
    variables.update(cxxstd.variables(cxx_std, home, current))
    return variables


def foreign_home(current: Mapping[str, str], home: str, homes_dir: str) -> str | None:
    """A CUDA_HOME/CUDA_PATH the user set to a toolkit other than ours, if any (pure)."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        value = current.get(var)
        if value and value.rstrip("/") != home and not value.startswith(homes_dir):
            return f"{var}={value}"
    return None


def constraints_text(python: str, pins: Mapping[str, str]) -> str:
    """Build constraints holding ``pins`` (torch and its companions) exactly (pure)."""
    lines = [f"# build constraints by `wheelcuda constraints` for {python}",
             "# use: pip install --build-constraint FILE ... (pip >= 25.3), "
             "uv pip install --build-constraint FILE ...,",
             "# or PIP_BUILD_CONSTRAINT=FILE / UV_BUILD_CONSTRAINT=FILE",
             *(f"{name}=={version}" for name, version in pins.items())]
    return "\n".join(lines) + "\n"


def constraint_word(path: str) -> str:
    """How UV_BUILD_CONSTRAINT and PIP_BUILD_CONSTRAINT name the file ``path`` (absolute):
    as it is, or as a ``file://`` URL where it holds whitespace (the module's docstring
    says why) (pure)."""
    return PurePosixPath(path).as_uri() if any(c.isspace() for c in path) else path


def word_path(word: str) -> str:
    """The file a word of those variables names: a ``file://`` URL's path, else the word
    (pure)."""
    parts = urlsplit(word)
    if parts.scheme == "file" and parts.netloc in ("", "localhost"):
        return unquote(parts.path, errors="surrogateescape")
    return word


def _in_folder(word: str, folder: str) -> bool:
    return bool(folder) and word_path(word).startswith(folder.rstrip("/") + "/")


def own_constraints(value: str, constraints_dir: str) -> list[str]:
    """The files of ``constraints_dir`` (env's) that ``value`` names (pure)."""
    return [word_path(w) for w in value.split() if _in_folder(w, constraints_dir)]


def _drop(value: str, drop: Callable[[int, str], bool]) -> str:
    """``value`` without the words ``drop(index, word)`` picks, each with one space next
    to it; the rest as it was, byte for byte (pure)."""
    out: list[str] = []
    skip_space = False
    words = 0
    for token in re.findall(r"\s+|\S+", value):
        if token.isspace():
            if not skip_space:
                out.append(token)
            skip_space = False
            continue
        words += 1
        if drop(words - 1, token):
            if out and out[-1].isspace():
                out.pop()
            else:
                skip_space = True
            continue
        out.append(token)
        skip_space = False
    return "".join(out)


def _append(value: str, word: str) -> str:
    return f"{value} {word}" if value.strip() else word


def split_paths(value: str, is_file: Callable[[str], bool]) -> tuple[list[str], list[str]]:
    """(the files ``value`` names by a path holding a space, which uv and pip read as
    several files; the words that are no file at all), ``value`` being a list of files
    as UV_BUILD_CONSTRAINT holds (pure, but for ``is_file``). A URL is no concern here."""
    words = value.split(" ")
    spaced: list[str] = []
    missing: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not word.strip() or "://" in word or word.startswith("file:") or is_file(word):
            continue
        for j in range(i, len(words)):
            joined = " ".join(words[i - 1:j + 1])
            if is_file(joined):
                spaced.append(joined)
                i = j + 1
                break
        else:
            missing.append(word)
    return spaced, missing


def isolated(current: Mapping[str, str], *, constraints: str | None, constraints_dir: str,
             switches: Mapping[str, str], arch_vars: Mapping[str, str],
             index: str | None) -> dict[str, str]:
    """What ``env`` exports for isolated builds (see the module's docstring) (pure). An
    earlier env's constraints go even when there are none now (a venv without torch must
    not keep the last one's torch); an emptied variable comes back as "" (:func:`exports`
    unsets it)."""
    out: dict[str, str] = {}
    ours = constraint_word(constraints) if constraints else None
    for var in BUILD_CONSTRAINT_VARS:
        was = current.get(var, "")
        kept = _drop(was, lambda _, w: w == ours or _in_folder(w, constraints_dir))
        value = _append(kept, ours) if ours else kept
        if ours or value != was:
            out[var] = value
    # a switch env set itself is set again, one the user set is theirs
    user = before_env(current)
    out.update({k: v for k, v in switches.items() if k not in user})
    out.update(arch_vars)
    out.update(_index(current, index))
    return out


def _index(current: Mapping[str, str], index: str | None) -> dict[str, str]:
    """PIP_EXTRA_INDEX_URL with ``index`` last and the one an earlier env added out, and
    which one env added now (none where the user's own value names it) (pure). Only the
    last entry equal to env's goes: an equal one the user added is theirs."""
    ours = current.get(ENV_INDEX_VAR)
    if not (index or ours):
        return {}
    words = current.get(PIP_INDEX_VAR, "").split()
    last = max((i for i, w in enumerate(words) if w == ours), default=None)
    users = _drop(current.get(PIP_INDEX_VAR, ""), lambda i, _: i == last)
    added = index if index and index not in users.split() else None
    return {PIP_INDEX_VAR: _append(users, added) if added else users,
            ENV_INDEX_VAR: added or ""}


def _fingerprint(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()[:8]


def _quote(value: str) -> str:
    return quote(value, safe="/", errors="surrogateescape")


@dataclass(frozen=True)
class Record:
    """What env set, as RECORD_VAR keeps it: ``@<environment>``, then ``NAME:<digest>``
    for a variable env created, ``NAME:<digest>:<the value it replaced>`` for one it
    changed, values percent-quoted, words separated by spaces."""

    #: The prefix of the environment the exports were made for.
    made_for: str | None = None
    #: name -> (the digest of the value env set, the value it replaced or None)
    entries: Mapping[str, tuple[str, str | None]] = field(default_factory=dict)

    @classmethod
    def read(cls, value: str) -> Record:
        """The record in ``value``; words it cannot read are left out (pure)."""
        made_for = None
        entries: dict[str, tuple[str, str | None]] = {}
        for word in value.split():
            if word.startswith("@"):
                made_for = unquote(word[1:], errors="surrogateescape")
                continue
            name, _, rest = word.partition(":")
            digest, colon, before = rest.partition(":")
            if _NAME.fullmatch(name) and name not in _OWN_ENTRIES and digest:
                entries[name] = (digest, unquote(before, errors="surrogateescape")
                                 if colon else None)
        return cls(made_for, entries)

    def text(self) -> str:
        words = [f"@{_quote(self.made_for)}"] if self.made_for else []
        words += [f"{name}:{digest}" + ("" if before is None else f":{_quote(before)}")
                  for name, (digest, before) in self.entries.items()]
        return " ".join(words)

    def held(self, current: Mapping[str, str]) -> dict[str, str | None]:
        """name -> the value env replaced (None: it created it), for each variable that
        still holds what env set: those the user changed since are theirs (pure)."""
        return {name: before for name, (digest, before) in self.entries.items()
                if name in current and _fingerprint(current[name]) == digest}


def made_for(current: Mapping[str, str]) -> str | None:
    """The environment the exports in ``current`` were made for, if env made any (pure)."""
    return Record.read(current.get(RECORD_VAR, "")).made_for


def before_env(current: Mapping[str, str]) -> dict[str, str]:
    """``current`` with each variable env set and that still holds its value put back as
    it was before (pure)."""
    out = dict(current)
    for name, before in Record.read(current.get(RECORD_VAR, "")).held(current).items():
        if before is None:
            out.pop(name, None)
        else:
            out[name] = before
    return out


#: What env derives from the environment it is made for: torch's C++ standard, and the
#: user's compiler behind the tree's host shim (cxxstd.py). An earlier env's value of
#: these, read back, would be taken for the user's: the last venv's torch's standard for
#: their choice (C++20 for a torch 2.13 venv after a 2.14 one), the last tree's shim for
#: their compiler.
_DERIVED = (cxxstd.VAR, "CXX", cxxstd.REAL_CXX_VAR)


def inputs(current: Mapping[str, str]) -> dict[str, str]:
    """What env reads in a shell holding ``current``: the variables of :data:`_DERIVED`
    as they were before an earlier env set them, the rest as they are (pure). The arch
    list stays as env left it: a machine's, not an environment's."""
    before = before_env(current)
    out = dict(current)
    for name in _DERIVED:
        if name in before:
            out[name] = before[name]
        else:
            out.pop(name, None)
    return out


def exports(wanted: Mapping[str, str], current: Mapping[str, str],
            environment: str) -> tuple[dict[str, str], list[str]]:
    """(the variables to set, those to unset) for ``wanted`` (what env exports for
    ``environment``) in a shell holding ``current``: with the record of what env set, and
    what an earlier env set and this one does not put back (pure)."""
    held = Record.read(current.get(RECORD_VAR, "")).held(current)
    out: dict[str, str] = {}
    unset: list[str] = []
    entries: dict[str, tuple[str, str | None]] = {}
    for name, value in wanted.items():
        if name in _OWN_ENTRIES and not value:  # an emptied list, or no index of env's
            unset += [name] if name in current else []
            continue
        out[name] = value
        before = held[name] if name in held else current.get(name)
        if name not in _OWN_ENTRIES and before != value:
            entries[name] = (_fingerprint(value), before)
    for name, before in held.items():
        if name not in wanted:
            _put_back(name, before, out, unset)
    out[RECORD_VAR] = Record(environment, entries).text()
    return out, unset


def _put_back(name: str, before: str | None, out: dict[str, str], unset: list[str]) -> None:
    if before is None:
        unset.append(name)
    else:
        out[name] = before


def undo(current: Mapping[str, str], homes_dir: str,
         constraints_dir: str) -> tuple[dict[str, str], list[str]]:
    """(the variables to set, those to unset) that take back what env exported in a
    shell holding ``current``, for ``env --unset`` (pure): each variable env set and that
    still holds its value as it was before, env's entries out of the lists, the record
    and env's index mark unset. What the user set or changed after env stays."""
    out: dict[str, str] = {}
    unset: list[str] = []
    for name, before in Record.read(current.get(RECORD_VAR, "")).held(current).items():
        _put_back(name, before, out, unset)
    path = _without_trees(current.get("PATH", ""), homes_dir)
    if path != current.get("PATH", ""):
        out["PATH"] = path
    lists = isolated(current, constraints=None, constraints_dir=constraints_dir,
                     switches={}, arch_vars={}, index=None)
    for name, value in lists.items():
        if value:
            out[name] = value
        elif name in current:
            unset.append(name)
    unset += [v for v in (ENV_INDEX_VAR, RECORD_VAR) if v in current and v not in unset]
    return out, unset
