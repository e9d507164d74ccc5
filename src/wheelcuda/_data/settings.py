"""Every ``WHEELCUDA_*`` environment variable, once, as data: its type, what it means,
who reads it, whether users set it, and where it stands against the command line and the
files that can say the same.

``user`` variables are the ones a person sets. ``internal`` ones are what wheelcuda sets
for its own programs inside a build (the tree's nvcc wrapper, the clang toolkit's nvcc
and fatbinary) or writes into uv's settings; nobody needs to set them.

A setting's :meth:`Setting.precedence` is the order in which its sources are asked, the
first that gives it winning, as uv does: the command line (or the PEP 517 backend's
``-C wheelcuda.*`` config setting), the variable, the project's ``[tool.wheelcuda]`` in
pyproject.toml, then the user's ``$XDG_CONFIG_HOME/wheelcuda/wheelcuda.toml``.
:func:`wheelcuda._rules.settings_read.read` asks them in that order and checks the value
by the row's ``kind`` and ``schemes``; the docs print the same order.

The README's table of user variables and docs/development.md's of internal ones are
generated from this (``make settings-docs``, :mod:`wheelcuda._rules.settings_doc`). The
standalone programs that run inside builds (``_nvcc_wrapper.py`` and the like) import
only the standard library, so they spell their names themselves; a unit test checks that
every ``WHEELCUDA_`` name in the sources is here, and every one here is used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

#: ``flag``: on for one of :data:`FLAG_WORDS`; ``int``: a whole number above 0;
#: ``number``: a number above 0; ``size``: an amount of memory (``64G``); ``word``: one of
#: the listed words; ``path``: a file or folder; ``url``/``urls``: one, or several
#: separated by spaces; ``url-or-file``: either; ``text``: anything (a name, a form).
#: ``int``, ``number``, ``size``, ``word`` (with words) and the URLs (with schemes) are
#: checked when read.
Kind = Literal["flag", "int", "number", "size", "word", "path", "url", "urls", "url-or-file",
               "text"]
Audience = Literal["user", "internal"]
#: How a flag variable is switched on (any case, surrounding space ignored): what
#: ``Context.flag`` accepts (tests check it against _context.py, which imports nothing).
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
    #: the URL schemes its value may use (none: not checked when read)
    schemes: tuple[str, ...] = ()
    #: a value as the fix of a bad one shows it
    example: str = ""
    #: the words a ``word`` may be, in any case (none: not checked when read)
    words: tuple[str, ...] = ()

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
#: An index wheels are taken from or sent to: a folder (file://) lists no sha256 to check
#: a wheel against.
_INDEX_SCHEMES = ("http", "https")

# Where things are kept.
CACHE_DIR: Final = Setting(
    "WHEELCUDA_CACHE_DIR", "path",
    "Where wheelcuda keeps its trees, fetched toolkits, wheel cache, memos and build logs "
    "(a folder only you can write to).",
    ("_store/paths.py", "_store/layout.py", "_warm.py"),
    default="`$XDG_CACHE_HOME/wheelcuda`, else `~/.cache/wheelcuda`",
    setters=("build_meta.py",))
STORE_DIR: Final = Setting(
    "WHEELCUDA_STORE_DIR", "path",
    "Where fetched toolkits and the links to local ones live when not in the cache folder "
    "(the build backend keeps its trees in a temporary cache and its toolkits here).",
    ("_store/layout.py", "build_meta.py"), default="the cache folder",
    setters=("build_meta.py",))

# Which compiler, and how it builds.
TOOLKIT: Final = Setting(
    "WHEELCUDA_TOOLKIT", "word",
    "Where the CUDA compiler comes from: `auto`, `wheels`, `local`, `redist`, `clang`, or "
    "the folder of a toolkit.",
    ("_pipeline/request.py",), default="`auto`", cli="--toolkit", config_setting="toolkit",
    example="auto")
INSTALLER: Final = Setting(
    "WHEELCUDA_INSTALLER", "word", "The installer `install` runs: `uv` or `pip`.",
    ("_probe/installer.py",),
    default="uv when it is on PATH or installed beside wheelcuda, else pip",
    words=("uv", "pip"), example="uv")
CXX_STD: Final = Setting(
    "WHEELCUDA_CXX_STD", "word",
    "The C++ standard the tree's compilers raise a build's older `-std` to: a number names "
    "one, `keep` (or `0`) keeps the build's own.",
    ("_rules/cxxstd.py", "_cxx_std.py", "_nvcc_wrapper.py"),
    default="the one torch's headers need", setters=("_rules/cxxstd.py",),
    # the standards a -std=c++NN names (GCC and clang take these): a typo such as c++20,
    # kept without a word, would turn the raise off silently
    words=("keep", "0", "11", "14", "17", "20", "23", "26"), example="20")
SPLIT_COMPILE: Final = Setting(
    "WHEELCUDA_SPLIT_COMPILE", "int",
    "nvcc's `--split-compile` for every compile call, fixed (the pool shares no threads "
    "then); `1` turns splitting off.",
    ("_rules/jobs.py", "_nvcc_wrapper.py"),
    default="threads the compile pool gives each call", example="2")
MEMORY: Final = Setting(
    "WHEELCUDA_MEMORY", "size",
    "The most memory the compiles of all your builds on this machine hold at once "
    "(`64G`, `512M`): a cap on a shared machine.",
    ("_rules/jobs.py", "_pool.py"),
    default="what the kernel says is available now (within the cgroup's limit, its page "
    "cache not counted) plus what the running compiles hold of their shares, read at each "
    "compile", example="64G")
POOL: Final = Setting(
    "WHEELCUDA_POOL", "path",
    "The compile pool's folder: every build whose compiles name the same one shares one "
    "memory budget, one order and one thread count.",
    ("_pool.py",), default="`$TMPDIR/wheelcuda-pool-<uid>-<pid namespace>` (`/tmp` without TMPDIR)")
COMPILE_CACHE: Final = Setting(
    "WHEELCUDA_COMPILE_CACHE", "text",
    "A compile cache for the tree's compilers (nvcc, the clang toolkit, the host C++ "
    "shim), on every route, at paths that do not change from build to build: `sccache` "
    "(found on PATH) or the path of an sccache program; sccache's own variables "
    "(`SCCACHE_DIR`, a remote store's) say where it keeps what it compiled.",
    ("_tree.py", "_probe/compile_cache.py"), default="off")
SERIAL_COMPILES: Final = Setting(
    "WHEELCUDA_SERIAL_COMPILES", "flag",
    "Leaves a torch extension's compiles that setuptools makes one after another (no "
    "ninja) to run one after another: each error then comes right after its file.",
    ("_overlap.py",), default="off: they run side by side in the compile pool, and each "
    "extension's link waits for its objects")
NO_PROGRESS: Final = Setting(
    "WHEELCUDA_NO_PROGRESS", "flag",
    "Keeps the tree's compilers off your terminal: uv and pip builds then say nothing of "
    "their compiles (without `-v`).",
    ("_build.py",), default="off: each compile's start and end on the terminal of a build "
    "uv or pip runs")
CLANG: Final = Setting(
    "WHEELCUDA_CLANG", "text",
    "The clang++ the clang toolkit uses, then the only one looked at; `none` turns the "
    "clang toolkit off, `index` takes only the package index's.",
    ("_sources/clang/probe.py", "_sources/clang/source.py", "_clang_nvcc.py"),
    default="the package index's clang in the store, the system's LLVM installs, then "
    "clang++ on PATH",
    setters=("_sources/clang/store.py",))
LLVM_ROOT: Final = Setting(
    "WHEELCUDA_LLVM_ROOT", "path",
    "Where the system's LLVM installs (`llvm-N/bin/clang++`) are looked for.",
    ("_sources/clang/probe.py", "_sources/clang/source.py"), default="`/usr/lib`")
LOCAL_ROOT: Final = Setting(
    "WHEELCUDA_LOCAL_ROOT", "path",
    "A folder whose `cuda` and `cuda-X.Y` toolkits are looked at besides CUDA_HOME, "
    "CUDA_PATH, PATH and conda.",
    ("_sources/local/probe.py",), default="`/usr/local`")

# NVIDIA's archives.
REDIST_URL: Final = Setting(
    "WHEELCUDA_REDIST_URL", "url",
    "A mirror laid out like NVIDIA's redist folder (https:// or file://) to fetch the CUDA "
    "archives from.",
    ("_pipeline/acquire.py",), default="NVIDIA's server")
REDIST_MANIFEST: Final = Setting(
    "WHEELCUDA_REDIST_MANIFEST", "url-or-file",
    "NVIDIA's release manifest (redistrib_X.Y.Z.json) to use as given, for a mirror or an "
    "offline copy.",
    ("_pipeline/fetchplan.py", "_sources/redist/source.py"),
    default="the pinned manifest of torch's release", cli="--redist-manifest",
    example="./redistrib_12.8.1.json")
ALLOW_HTTP: Final = Setting(
    "WHEELCUDA_ALLOW_HTTP", "flag",
    "Lets an unpinned manifest be read over plain http from a host other than this machine "
    "(every archive's sha256 comes from it).",
    ("_pipeline/fetchplan.py",), default="off")

# A team's wheels.
INDEX_URL: Final = Setting(
    "WHEELCUDA_INDEX_URL", "urls",
    "The team's package indexes a build's wheel is looked for in before building "
    "(`--no-index` turns them off).",
    ("_team/rules.py",), default="none", cli="--index", project="index",
    user_file="index", schemes=_INDEX_SCHEMES, example="https://pypi.example.com/simple/")
PUBLISH_URL: Final = Setting(
    "WHEELCUDA_PUBLISH_URL", "url", "The team's index each wheel built is uploaded to.",
    ("_team/rules.py",), default="none", cli="--publish", project="publish",
    user_file="publish", schemes=_INDEX_SCHEMES, example="https://pypi.example.com/")
PREBUILT_URL: Final = Setting(
    "WHEELCUDA_PREBUILT_URL", "urls",
    "Public indexes of prebuilt wheels consulted after the team's (nothing comes from a "
    "third party unless named).",
    ("_team/rules.py",), default="none", cli="--prebuilt", project="prebuilt",
    user_file="prebuilt", schemes=_INDEX_SCHEMES,
    example="https://wheels.example.com/simple/")
INDEX_USERNAME: Final = Setting(
    "WHEELCUDA_INDEX_USERNAME", "text", "Who wheelcuda is on the team's index.",
    ("_team/probe_credentials.py",), default="anonymous", before=_TEAM_AUTH_BEFORE,
    after=_TEAM_AUTH_AFTER)
INDEX_PASSWORD: Final = Setting(
    "WHEELCUDA_INDEX_PASSWORD", "text",
    "The password or token for the team's index (kept out of the installer's environment, "
    "where a setup.py could read it).",
    ("_team/probe_credentials.py",), default="anonymous", before=_TEAM_AUTH_BEFORE,
    after=_TEAM_AUTH_AFTER)

# Switches.
NO_GPU_PROBE: Final = Setting(
    "WHEELCUDA_NO_GPU_PROBE", "flag",
    "Turns GPU probing off (tests, and machines whose driver hangs): the archs must then be "
    "given.",
    ("_probe/gpus.py",), default="off")
NO_WARM: Final = Setting(
    "WHEELCUDA_NO_WARM", "flag",
    "Turns off the replay of `wheelcuda env`'s last answer while nothing behind it changed.",
    ("_warm.py",), default="off")
DEBUG: Final = Setting(
    "WHEELCUDA_DEBUG", "flag", "Shows the traceback of an internal error.",
    ("_report.py",), default="off")

# Set by wheelcuda for the programs of a build.
ARCHS: Final = Setting(
    "WHEELCUDA_ARCHS", "text",
    "The archs (torch's syntax, `9.0;12.0+PTX`) the tree's nvcc wrapper prunes every "
    "compile to.",
    ("_nvcc_wrapper.py",), "internal", setters=("_rules/environ.py",))
ALL_ARCHS: Final = Setting(
    "WHEELCUDA_ALL_ARCHS", "flag",
    "Leaves every nvcc call's own arch options as they are (`--all-archs`).",
    ("_nvcc_wrapper.py",), "internal", setters=("_rules/environ.py",))
REAL_CXX: Final = Setting(
    "WHEELCUDA_REAL_CXX", "path",
    "The compiler the tree's host shim runs: the user's CXX, else `c++`.",
    ("_cxx_std.py", "_rules/cxxstd.py", "_rules/buildkey.py"), "internal",
    setters=("_rules/cxxstd.py",))
JOB_GB: Final = Setting(
    "WHEELCUDA_JOB_GB", "number",
    "The memory one compile of this build holds in the compile pool (GiB), as its last "
    "build measured it; unset, the recipe table's figure for the package the tree sees "
    "building, else 4.",
    ("_tree.py", "_rules/jobs.py"), "internal", setters=("_rules/jobs.py",), example="6")
NVCC_LOG: Final = Setting(
    "WHEELCUDA_NVCC_LOG", "path",
    "The file the tree's compilers append each call to, marking the calls whose standard "
    "they raised, whose archs they left unpruned, or that the pool started before one that "
    "came earlier (longest first).",
    ("_nvcc_wrapper.py", "_cxx_std.py", "_progress.py"), "internal",
    setters=("_commands/install/run.py",))
PROGRESS: Final = Setting(
    "WHEELCUDA_PROGRESS", "path",
    "The file the tree's compilers append a JSON line to for each compile's start and end "
    "(install's own build: without it, they go to the tree cache's events folder).",
    ("_build.py",), "internal", setters=("_commands/build_watch.py",))
ORDER: Final = Setting(
    "WHEELCUDA_ORDER", "path",
    "A JSON file of each source's compile seconds in the package's last build: the compile "
    "pool starts the longest first (unset, the recipe table's guess the tree holds).",
    ("_tree.py",), "internal", setters=("_pipeline/buildplan.py",))
CLANG_VERSION: Final = Setting(
    "WHEELCUDA_CLANG_VERSION", "text",
    "clang's version, for the clang toolkit's `nvcc --version`.",
    ("_clang_nvcc.py",), "internal", setters=("_sources/clang/store.py",))
PTXAS_VERSION: Final = Setting(
    "WHEELCUDA_PTXAS_VERSION", "text",
    "ptxas's version: the CUDA release the clang toolkit's `nvcc --version` says.",
    ("_clang_nvcc.py",), "internal", setters=("_sources/clang/store.py",))
CLANG_ID: Final = Setting(
    "WHEELCUDA_CLANG_ID", "text",
    "A digest of the clang, its headers, the toolkit's scripts and their Python, in "
    "`nvcc --version` (the wheel cache keys builds by it).",
    ("_clang_nvcc.py",), "internal", setters=("_sources/clang/store.py",))
NVCC_HERE: Final = Setting(
    "WHEELCUDA_NVCC_HERE", "path",
    "The path the clang toolkit's nvcc was run through: the tree is the folder above its "
    "`bin`.",
    ("_clang_nvcc.py",), "internal", setters=("_sources/clang/store.py",))
NVFATBIN: Final = Setting(
    "WHEELCUDA_NVFATBIN", "path",
    "The `libnvfatbin.so.12` the clang toolkit's fatbinary loads.",
    ("_fatbinary.py",), "internal", setters=("_sources/clang/store.py",))
FATBIN_SASS: Final = Setting(
    "WHEELCUDA_FATBIN_SASS", "text",
    "The archs whose SASS a compile asked for; the clang toolkit's fatbinary leaves out "
    "what clang made only on the way to PTX.",
    ("_fatbinary.py",), "internal", setters=("_clang_nvcc.py",))

CACHE_PROGRAM: Final = Setting(
    "WHEELCUDA_CACHE_PROGRAM", "path",
    "The sccache the clang toolkit's nvcc runs clang through: set by the tree's nvcc for a "
    "compile while the compile cache is on.",
    ("_clang_nvcc.py",), "internal", setters=("_nvcc_wrapper.py",))
ADMITTED: Final = Setting(
    "WHEELCUDA_ADMITTED", "flag",
    "Set for a compile's own processes once the compile pool admitted it: a compile nvcc "
    "runs through this tree's host shim is a step of it, not one more to wait for.",
    ("_progress.py",), "internal", setters=("_progress.py",))
ENV_INDEX: Final = Setting(
    "WHEELCUDA_ENV_INDEX", "url",
    "The index `wheelcuda env` added to PIP_EXTRA_INDEX_URL (PyTorch's, for a torch from "
    "there): the next `env` takes it out before adding its own.",
    ("_rules/environ.py",), "internal", setters=("_rules/environ.py",))
ENV_SET: Final = Setting(
    "WHEELCUDA_ENV_SET", "text",
    "What `wheelcuda env` set in this shell and the environment it was made for: each "
    "variable with a digest of its value and the value it replaced, so that the next `env` "
    "and `env --unset` put back only their own.",
    ("_rules/environ.py",), "internal", setters=("_rules/environ.py",))

# Written into uv's settings (a package's extra-build-variables) by uv-config.
BUILD_KEY: Final = Setting(
    "WHEELCUDA_BUILD_KEY", "text",
    "What a package's binary depends on (torch, the compiler, archs, host compiler, then a "
    "digest of the rest of the build key), so that uv's build cache key changes with it.",
    ("uv",), "internal", setters=("_commands/uv_config/settings.py",))
SET: Final = Setting(
    "WHEELCUDA_SET", "text",
    "The names uv-config wrote into a package's variables, each with a digest of its value, "
    "so that a rerun changes only its own.",
    ("_rules/uvconfig.py", "_probe/uvforms.py"), "internal", setters=("_rules/uvconfig.py",))

#: Every variable: users' first, in the order the docs list them.
ALL: Final = (CACHE_DIR, STORE_DIR, TOOLKIT, INSTALLER, CXX_STD, SPLIT_COMPILE, MEMORY, POOL,
              COMPILE_CACHE,
              CLANG, LLVM_ROOT, LOCAL_ROOT, REDIST_URL, REDIST_MANIFEST, ALLOW_HTTP, INDEX_URL,
              PUBLISH_URL, PREBUILT_URL, INDEX_USERNAME, INDEX_PASSWORD, NO_GPU_PROBE,
              SERIAL_COMPILES, NO_PROGRESS, NO_WARM, DEBUG, ARCHS, ALL_ARCHS, REAL_CXX, JOB_GB,
              NVCC_LOG, PROGRESS, ORDER, CLANG_VERSION, PTXAS_VERSION, CLANG_ID, NVCC_HERE,
              NVFATBIN, FATBIN_SASS, CACHE_PROGRAM, ADMITTED, ENV_INDEX, ENV_SET, BUILD_KEY, SET)

_BY_NAME: Final = {s.name: s for s in ALL}


def named(name: str) -> Setting:
    """The setting called ``name`` (KeyError when there is none: a name spelled in code
    must be registered here)."""
    return _BY_NAME[name]
