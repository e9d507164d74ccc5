"""The host C++ compiler nvcc will run, against the versions this nvcc accepts.

nvcc refuses a host compiler newer than its ``crt/host_config.h`` allows
(``#error -- unsupported GNU version!``), and that line arrives deep in a build log.
Reading the limit from the header of the nvcc at hand, not from a table, keeps the
check right for every CUDA release, including those newer than wheelcuda.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from .checks import Kind, Problem, parse_version

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .._values import HostCompiler

_CCBIN_OPTIONS = ("-ccbin", "--compiler-bindir")


@dataclass(frozen=True)
class HostLimits:
    """The newest compiler majors a ``crt/host_config.h`` lets through; None if unread."""

    gcc_max_major: int | None  # `#if __GNUC__ > 15` -> 15
    clang_max_major: int | None  # `(__clang_major__ >= 21)` -> 20


def parse_host_config(text: str) -> HostLimits:
    """Pure: the gcc and clang limits in the text of ``crt/host_config.h``.

    The clang limit is read inside the plain-clang block (``#if defined(__clang__) &&``)
    only: the header also checks Grace clang (``__GRCO_CLANG_COMPILER__``) and HOS
    clang (``__HORIZON__``), whose limits may differ from the plain one.
    """
    gcc = re.search(r"^\s*#\s*if\s+__GNUC__\s*(>=?)\s*(\d+)", text, re.MULTILINE)
    clang_block = re.search(r"^\s*#\s*if\s+defined\(__clang__\)\s*&&", text, re.MULTILINE)
    clang = None
    if clang_block:
        rest = text[clang_block.end() :]
        clang = re.search(r"^\s*#\s*if\b.*?__clang_major__\s*(>=?)\s*(\d+)", rest, re.MULTILINE)
    return HostLimits(_max_major(gcc), _max_major(clang))


def _max_major(match: re.Match[str] | None) -> int | None:
    """``> 15`` allows 15; ``>= 21`` allows 20."""
    if match is None:
        return None
    bound = int(match[2])
    return bound - 1 if match[1] == ">=" else bound


def host_compiler_command(environ: Mapping[str, str]) -> str:
    """Pure: the host compiler nvcc runs in a torch extension build with ``environ``.

    nvcc takes the last ``-ccbin`` on its command line, which is made of
    NVCC_PREPEND_FLAGS, then torch's own ``-ccbin $CC`` (torch.utils.cpp_extension
    adds it whenever CC is set and the extension passes no -ccbin of its own), then
    NVCC_APPEND_FLAGS. Only without any -ccbin does nvcc read NVCC_CCBIN, and its
    default is ``gcc`` from PATH (checked with nvcc 13.0 ``-dryrun``). So CC wins
    over NVCC_CCBIN, and CXX plays no part: neither torch nor nvcc passes it on.
    """
    chosen = [
        *_ccbin_values(environ.get("NVCC_PREPEND_FLAGS", "")),
        *([environ["CC"]] if environ.get("CC") else []),
        *_ccbin_values(environ.get("NVCC_APPEND_FLAGS", "")),
    ]
    if chosen:
        return chosen[-1]
    return environ.get("NVCC_CCBIN") or "gcc"


def _ccbin_values(flags: str) -> list[str]:
    """The ``-ccbin X``, ``-ccbin=X`` and ``--compiler-bindir[=]X`` values in ``flags``."""
    words = flags.split()
    values = []
    for position, word in enumerate(words):
        option, equals, value = word.partition("=")
        if option not in _CCBIN_OPTIONS:
            continue
        if equals:
            values.append(value)
        elif position + 1 < len(words):
            values.append(words[position + 1])
    return values


def compiler_family(banner: str) -> str:
    """Pure: "clang", "gcc" or "unknown" from the output of ``--version``."""
    if "clang version" in banner:
        return "clang"
    first = banner.strip().splitlines()[0] if banner.strip() else ""
    if "Free Software Foundation" in banner or re.match(r"\S*\b(gcc|g\+\+)\b", first):
        return "gcc"
    return "unknown"


def banner_version(banner: str) -> str | None:
    """Pure: the version in a ``--version`` banner.

    gcc prints it after the parenthesised vendor ("gcc (Debian 12.2.0-14) 12.2.0"),
    clang after "clang version" ("Ubuntu clang version 18.1.3 (1ubuntu1)").
    """
    match = re.search(r"(?:clang version|\))\s+(\d+\.\d+(?:\.\d+)?)", banner)
    return match[1] if match else None


def check_host_compiler(cc: HostCompiler, limits: HostLimits, nvcc_version: str
                        ) -> Problem | None:
    """Pure: None when nvcc accepts ``cc``, else what is wrong and the fix.

    An unknown family, version or limit is not a rejection: nvcc decides then, and
    ``cc.reason`` says why the version is unknown.
    """
    if cc.path is None:
        message = f"host compiler {cc.command} not found on PATH; nvcc {nvcc_version} needs one"
        return Problem(Kind.HOST, message, "apt-get install g++ (or export NVCC_CCBIN=<g++>)")
    limit = {"gcc": limits.gcc_max_major, "clang": limits.clang_max_major}.get(cc.family)
    major = _major(cc.version)
    if limit is None or major is None or major <= limit:
        return None
    return _too_new(cc, limit, nvcc_version)


def _major(version: str | None) -> int | None:
    """Major of a version: 12 for "12.2.0"; None when unknown."""
    parsed = parse_version(version)
    return parsed.major if parsed else None


def _too_new(cc: HostCompiler, limit: int, nvcc_version: str) -> Problem:
    """The rejection: compiler, version, limit, and the commands that fix it."""
    message = (
        f"nvcc {nvcc_version} does not accept {cc.family} {cc.version} ({cc.path}) as host"
        f" compiler: its crt/host_config.h allows {cc.family} up to {limit}"
    )
    if cc.family == "gcc":
        package, compiler = f"g++-{limit}", f"g++-{limit}"
    else:
        package, compiler = f"clang-{limit}", f"clang++-{limit}"
    fix = (
        f"apt-get install {package} && export NVCC_CCBIN={compiler}"
        " (if CC is set, torch passes it to nvcc as -ccbin, which wins over NVCC_CCBIN: unset CC)"
    )
    return Problem(Kind.HOST, message, fix)
