"""Every ``WHEELCUDA_*`` environment variable, once, as data: its type, what it means,
who reads it, whether users set it, and where it stands against the command line and the
files that can say the same.

``user`` variables are the ones a person sets. ``internal`` ones are what wheelcuda sets
for its own programs inside a build (the tree's nvcc wrapper, the clang toolkit's nvcc
and fatbinary) or writes into uv's settings; nobody needs to set them.

A setting's :meth:`Setting.precedence` is the order in which its sources are asked, the
first that gives it winning, as uv does: the command line (or the PEP 517 backend's
``-C wheelcuda.*`` config setting), the variable, the project's ``[tool.wheelcuda]`` in
pyproject.toml, then the user's ``$XDG_CONFIG_HOME/wheelcuda/wheelcuda.toml`` (read by
``probe/shareconf.py``, chosen by ``rules/sharing.py``).

The README's table of user variables and docs/development.md's of internal ones are
generated from this (``make settings-docs``, :mod:`wheelcuda.rules.settings_doc`). The
standalone programs that run inside builds (``_nvcc_wrapper.py`` and the like) import
only the standard library, so they spell their names themselves; a unit test checks that
every ``WHEELCUDA_`` name in the sources is here, and every one here is used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "ALL",
    "ALLOW_HTTP",
    "ALL_ARCHS",
    "ARCHS",
    "BUILD_KEY",
    "CACHE_DIR",
    "CLANG",
    "CLANG_ID",
    "CLANG_VERSION",
    "CXX_STD",
    "DEBUG",
    "FATBIN_SASS",
    "FLAG_WORDS",
    "INDEX_PASSWORD",
    "INDEX_URL",
    "INDEX_USERNAME",
    "INSTALLER",
    "JOBSERVER",
    "LLVM_ROOT",
    "LOCAL_ROOT",
    "NINJA_ORDER",
    "NO_GPU_PROBE",
    "NO_WARM",
    "NVCC_HERE",
    "NVCC_LOG",
    "NVFATBIN",
    "PREBUILT_URL",
    "PROGRESS",
    "PTXAS_VERSION",
    "PUBLISH_URL",
    "REAL_CXX",
    "REDIST_MANIFEST",
    "REDIST_URL",
    "SET",
    "SPLIT_COMPILE",
    "STORE_DIR",
    "TOOLKIT",
    "USER_FILE",
    "Audience",
    "Kind",
    "Setting",
    "named",
]

#: ``flag``: on for one of :data:`FLAG_WORDS`; ``int``: a whole number; ``word``: one of
#: the listed words; ``path``: a file or folder; ``url``/``urls``: one, or several
#: separated by spaces; ``url-or-file``: either; ``text``: anything (a name, a form).
Kind = Literal["flag", "int", "word", "path", "url", "urls", "url-or-file", "text"]
Audience = Literal["user", "internal"]
#: How a flag variable is switched on (any case, surrounding space ignored): what
#: ``Context.flag`` accepts (tests check it against context.py, which imports nothing).
FLAG_WORDS: Final = ("1", "true", "yes", "on")
#: The user's config file, as the docs name it (``probe/shareconf.user_file``).
USER_FILE: Final = "~/.config/wheelcuda/wheelcuda.toml"


@dataclass(frozen=True, slots=True)
class Setting:
    """One environment variable."""

    name: str
    kind: Kind
    #: what it does, in one sentence
    meaning: str
    #: the files that read it (relative to src/wheelcuda; a standalone program by its file
    #: name alone), or the program outside wheelcuda that does
    readers: tuple[str, ...]
    audience: Audience = "user"
    #: what happens when it is unset (or empty)
    default: str = ""
    #: the command-line option that says the same and wins over it
    cli: str = ""
    #: the PEP 517 backend's config setting that says the same and wins over it (the
    #: backend's counterpart of :attr:`cli`)
    config_setting: str = ""
    #: its key in the project's ``[tool.wheelcuda]``, asked after it
    project: str = ""
    #: its key in the user's file (:data:`USER_FILE`), asked after the project's
    user_file: str = ""
    #: sources asked before it, besides the command line (the URL's own user:password)
    before: tuple[str, ...] = ()
    #: sources asked after it, besides the files (``~/.netrc``)
    after: tuple[str, ...] = ()
    #: the files that set it for a child process (internal ones; a user one wheelcuda
    #: also hands on, such as the standard a tree's compilers raise to)
    setters: tuple[str, ...] = ()

    def precedence(self) -> tuple[str, ...]:
        """Where the value comes from, first source first (the first that gives it wins)."""
        given = " / ".join([*([f"`{self.cli}`"] if self.cli else []),
                            *([f"`-C wheelcuda.{self.config_setting}`"]
                              if self.config_setting else [])])
        return (*((given,) if given else ()), *self.before, f"`{self.name}`",
                *((f"`[tool.wheelcuda] {self.project}` (pyproject.toml)",)
                  if self.project else ()),
                *((f"`{self.user_file}` ({USER_FILE})",) if self.user_file else ()),
                *self.after)


_TEAM_AUTH_BEFORE = ("the URL's `user:password`",)
_TEAM_AUTH_AFTER = ("`~/.netrc`", "keyring")

# Where things are kept.
CACHE_DIR: Final = Setting(
    "WHEELCUDA_CACHE_DIR", "path",
    "Where wheelcuda keeps its trees, fetched toolkits, wheel cache, memos and build logs "
    "(a folder only you can write to).",
    ("store/paths.py", "store/layout.py", "warm.py"),
    default="`$XDG_CACHE_HOME/wheelcuda`, else `~/.cache/wheelcuda`",
    setters=("build_meta.py",))
STORE_DIR: Final = Setting(
    "WHEELCUDA_STORE_DIR", "path",
    "Where fetched toolkits and the links to local ones live when not in the cache folder "
    "(the build backend keeps its trees in a temporary cache and its toolkits here).",
    ("store/layout.py", "build_meta.py"), default="the cache folder",
    setters=("build_meta.py",))

# Which compiler, and how it builds.
TOOLKIT: Final = Setting(
    "WHEELCUDA_TOOLKIT", "word",
    "Where the CUDA compiler comes from: `auto`, `wheels`, `local`, `redist`, `clang`, or "
    "the folder of a toolkit.",
    ("pipeline/request.py",), default="`auto`", cli="--toolkit", config_setting="toolkit")
INSTALLER: Final = Setting(
    "WHEELCUDA_INSTALLER", "word", "The installer `install` runs: `uv` or `pip`.",
    ("probe/installer.py",),
    default="uv when it is on PATH or installed beside wheelcuda, else pip")
CXX_STD: Final = Setting(
    "WHEELCUDA_CXX_STD", "text",
    "The C++ standard the tree's compilers raise a build's older `-std` to: a number names "
    "one, `keep` keeps the build's own.",
    ("rules/cxxstd.py", "_cxx_std.py", "_nvcc_wrapper.py"),
    default="the one torch's headers need", setters=("rules/cxxstd.py",))
SPLIT_COMPILE: Final = Setting(
    "WHEELCUDA_SPLIT_COMPILE", "int",
    "nvcc's `--split-compile` for every compile call, fixed (the shared pool off); `1` "
    "turns splitting off.",
    ("rules/jobs.py", "_nvcc_pool.py"),
    default="threads from the pool of `WHEELCUDA_JOBSERVER`")
CLANG: Final = Setting(
    "WHEELCUDA_CLANG", "text",
    "The clang++ the clang toolkit uses, then the only one looked at; `none` turns the "
    "clang toolkit off, `index` takes only the package index's.",
    ("probe/clang.py", "sources/clang.py", "_clang_nvcc.py"),
    default="the package index's clang in the store, the system's LLVM installs, then "
    "clang++ on PATH",
    setters=("store/clangroot.py",))
LLVM_ROOT: Final = Setting(
    "WHEELCUDA_LLVM_ROOT", "path",
    "Where the system's LLVM installs (`llvm-N/bin/clang++`) are looked for.",
    ("probe/clang.py", "sources/clang.py"), default="`/usr/lib`")
LOCAL_ROOT: Final = Setting(
    "WHEELCUDA_LOCAL_ROOT", "path",
    "A folder whose `cuda` and `cuda-X.Y` toolkits are looked at besides CUDA_HOME, "
    "CUDA_PATH, PATH and conda.",
    ("probe/localcuda.py",), default="`/usr/local`")

# NVIDIA's archives.
REDIST_URL: Final = Setting(
    "WHEELCUDA_REDIST_URL", "url",
    "A mirror laid out like NVIDIA's redist folder (https:// or file://) to fetch the CUDA "
    "archives from.",
    ("pipeline/acquire.py",), default="NVIDIA's server")
REDIST_MANIFEST: Final = Setting(
    "WHEELCUDA_REDIST_MANIFEST", "url-or-file",
    "NVIDIA's release manifest (redistrib_X.Y.Z.json) to use as given, for a mirror or an "
    "offline copy.",
    ("pipeline/acquire.py", "sources/redist.py"),
    default="the pinned manifest of torch's release", cli="--redist-manifest")
ALLOW_HTTP: Final = Setting(
    "WHEELCUDA_ALLOW_HTTP", "flag",
    "Lets an unpinned manifest be read over plain http from a host other than this machine "
    "(every archive's sha256 comes from it).",
    ("pipeline/fetchplan.py",), default="off")

# A team's wheels.
INDEX_URL: Final = Setting(
    "WHEELCUDA_INDEX_URL", "urls",
    "The team's package indexes a build's wheel is looked for in before building "
    "(`--no-index` turns them off).",
    ("rules/sharing.py",), default="none", cli="--index", project="index",
    user_file="index")
PUBLISH_URL: Final = Setting(
    "WHEELCUDA_PUBLISH_URL", "url", "The team's index each wheel built is uploaded to.",
    ("rules/sharing.py",), default="none", cli="--publish", project="publish",
    user_file="publish")
PREBUILT_URL: Final = Setting(
    "WHEELCUDA_PREBUILT_URL", "urls",
    "Public indexes of prebuilt wheels consulted after the team's (nothing comes from a "
    "third party unless named).",
    ("rules/sharing.py",), default="none", cli="--prebuilt", project="prebuilt",
    user_file="prebuilt")
INDEX_USERNAME: Final = Setting(
    "WHEELCUDA_INDEX_USERNAME", "text", "Who wheelcuda is on the team's index.",
    ("probe/credentials.py",), default="anonymous", before=_TEAM_AUTH_BEFORE,
    after=_TEAM_AUTH_AFTER)
INDEX_PASSWORD: Final = Setting(
    "WHEELCUDA_INDEX_PASSWORD", "text",
    "The password or token for the team's index (kept out of the installer's environment, "
    "where a setup.py could read it).",
    ("probe/credentials.py",), default="anonymous", before=_TEAM_AUTH_BEFORE,
    after=_TEAM_AUTH_AFTER)

# Switches.
NO_GPU_PROBE: Final = Setting(
    "WHEELCUDA_NO_GPU_PROBE", "flag",
    "Turns GPU probing off (tests, and machines whose driver hangs): the archs must then be "
    "given.",
    ("probe/gpus.py",), default="off")
NO_WARM: Final = Setting(
    "WHEELCUDA_NO_WARM", "flag",
    "Turns off the replay of `wheelcuda env`'s last answer while nothing behind it changed.",
    ("warm.py",), default="off")
DEBUG: Final = Setting(
    "WHEELCUDA_DEBUG", "flag", "Shows the traceback of an internal error.",
    ("report.py",), default="off")

# Set by wheelcuda for the programs of a build.
ARCHS: Final = Setting(
    "WHEELCUDA_ARCHS", "text",
    "The archs (torch's syntax, `9.0;12.0+PTX`) the tree's nvcc wrapper prunes every "
    "compile to.",
    ("_nvcc_wrapper.py",), "internal", setters=("rules/environ.py",))
ALL_ARCHS: Final = Setting(
    "WHEELCUDA_ALL_ARCHS", "flag",
    "Leaves every nvcc call's own arch options as they are (`--all-archs`).",
    ("_nvcc_wrapper.py",), "internal", setters=("rules/environ.py",))
REAL_CXX: Final = Setting(
    "WHEELCUDA_REAL_CXX", "path",
    "The compiler the tree's host shim runs: the user's CXX, else `c++`.",
    ("_cxx_std.py", "rules/cxxstd.py", "rules/buildkey.py"), "internal",
    setters=("rules/cxxstd.py",))
JOBSERVER: Final = Setting(
    "WHEELCUDA_JOBSERVER", "text",
    "The thread pool a build's nvcc calls share, as `FOLDER:THREADS:SPLITS:CAP`.",
    ("_nvcc_pool.py",), "internal", setters=("rules/jobs.py",))
NVCC_LOG: Final = Setting(
    "WHEELCUDA_NVCC_LOG", "path",
    "The file the tree's compilers append each call to, marking the calls whose standard "
    "they raised or whose archs they left unpruned (and the tree's ninja, that it put the "
    "compiles longest first).",
    ("_nvcc_wrapper.py", "_cxx_std.py", "_ninja.py"), "internal",
    setters=("commands/install.py",))
PROGRESS: Final = Setting(
    "WHEELCUDA_PROGRESS", "path",
    "The file the tree's compilers append a JSON line to for each compile's start and end.",
    ("_progress.py",), "internal", setters=("commands/build_watch.py",))
NINJA_ORDER: Final = Setting(
    "WHEELCUDA_NINJA_ORDER", "path",
    "A JSON file of each source's compile seconds (the package's last build, else the "
    "recipe table's guess); the tree's ninja starts torch's longest compiles first (the "
    "tree's sitecustomize puts its bin first on PATH while it is set). Unset, the tree's "
    "ninja takes the recipe table's guess it holds (bin/.ninja-order.json); set empty, it "
    "orders nothing.",
    ("_ninja.py", "_site.py"), "internal", setters=("pipeline/buildplan.py",))
CLANG_VERSION: Final = Setting(
    "WHEELCUDA_CLANG_VERSION", "text",
    "clang's version, for the clang toolkit's `nvcc --version`.",
    ("_clang_nvcc.py",), "internal", setters=("store/clangroot.py",))
PTXAS_VERSION: Final = Setting(
    "WHEELCUDA_PTXAS_VERSION", "text",
    "ptxas's version: the CUDA release the clang toolkit's `nvcc --version` says.",
    ("_clang_nvcc.py",), "internal", setters=("store/clangroot.py",))
CLANG_ID: Final = Setting(
    "WHEELCUDA_CLANG_ID", "text",
    "A digest of the clang, its headers, the toolkit's scripts and their Python, in "
    "`nvcc --version` (the wheel cache keys builds by it).",
    ("_clang_nvcc.py",), "internal", setters=("store/clangroot.py",))
NVCC_HERE: Final = Setting(
    "WHEELCUDA_NVCC_HERE", "path",
    "The path the clang toolkit's nvcc was run through: the tree is the folder above its "
    "`bin`.",
    ("_clang_nvcc.py",), "internal", setters=("store/clangroot.py",))
NVFATBIN: Final = Setting(
    "WHEELCUDA_NVFATBIN", "path",
    "The `libnvfatbin.so.12` the clang toolkit's fatbinary loads.",
    ("_fatbinary.py",), "internal", setters=("store/clangroot.py",))
FATBIN_SASS: Final = Setting(
    "WHEELCUDA_FATBIN_SASS", "text",
    "The archs whose SASS a compile asked for; the clang toolkit's fatbinary leaves out "
    "what clang made only on the way to PTX.",
    ("_fatbinary.py",), "internal", setters=("_clang_nvcc.py",))

# Written into uv's settings (a package's extra-build-variables) by uv-config.
BUILD_KEY: Final = Setting(
    "WHEELCUDA_BUILD_KEY", "text",
    "What a package's binary depends on (torch, nvcc, archs, host compiler), so that uv's "
    "build cache key changes with it.",
    ("uv",), "internal", setters=("commands/uv_config.py",))
SET: Final = Setting(
    "WHEELCUDA_SET", "text",
    "The names uv-config wrote into a package's variables, each with a digest of its value, "
    "so that a rerun changes only its own.",
    ("rules/uvconfig.py", "probe/uvforms.py"), "internal", setters=("rules/uvconfig.py",))

#: Every variable: users' first, in the order the docs list them.
ALL: Final = (CACHE_DIR, STORE_DIR, TOOLKIT, INSTALLER, CXX_STD, SPLIT_COMPILE, CLANG,
              LLVM_ROOT, LOCAL_ROOT, REDIST_URL, REDIST_MANIFEST, ALLOW_HTTP, INDEX_URL,
              PUBLISH_URL, PREBUILT_URL, INDEX_USERNAME, INDEX_PASSWORD, NO_GPU_PROBE,
              NO_WARM, DEBUG, ARCHS, ALL_ARCHS, REAL_CXX, JOBSERVER, NVCC_LOG, PROGRESS,
              NINJA_ORDER,
              CLANG_VERSION, PTXAS_VERSION, CLANG_ID, NVCC_HERE, NVFATBIN, FATBIN_SASS,
              BUILD_KEY, SET)

_BY_NAME: Final = {s.name: s for s in ALL}


def named(name: str) -> Setting:
    """The setting called ``name`` (KeyError when there is none: a name spelled in code
    must be registered here)."""
    return _BY_NAME[name]
