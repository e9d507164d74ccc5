"""The part of a build key that decides whether a wheel built on another machine serves
here (a team builds once), as data (pure).

A build key (:mod:`wheelcuda._rules.buildkey`) holds what only this machine needs to tell
its own builds apart: the compiler's exact version and the host compiler. A wheel built
elsewhere serves when the sources, torch and its CUDA, the compiler's release (major.
minor: the machine that installs may have no compiler at all), the archs and pruning,
the Python tag, the C++ ABI, the build variables, the installer's arguments and the CPU
arch and the C library (a newer glibc's symbols do not load on an older one)
are the same. That subset is :func:`share_fields`; its digest names the wheel in
its local version label (:func:`local_label`, as torch's ``+cu128``), and the whole of it
is written inside the wheel's ``.dist-info`` (:data:`KEY_FILE`), read again before a
downloaded wheel is installed (:func:`matches`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from .._data.recipes import RECIPES
from .._rules import redact

#: The file in a wheel's ``.dist-info`` that holds ``{"format": ..., "share_id": ...,
#: "fields": ...}``.
KEY_FILE = "WHEELCUDA_KEY.json"
#: What the fields of :data:`KEY_FILE` are: a field added or changed makes another
#: format, so that a wheel of another wheelcuda is said to be one instead of silently
#: never matching. A file without it is format 1 (written before the field existed).
KEY_FORMAT = 1
#: What begins wheelcuda's segment of a local version label: ``+wc<12 hex>``.
LABEL_PREFIX = "wc"

#: The build key's fields a shared wheel keeps as they are; ``compiler`` becomes
#: ``compiler_release``; ``host_compiler`` and ``names`` are left out.
_KEPT = ("packages", "torch", "torch_cuda", "archs", "prune", "python", "cxx11_abi",
         "variables", "installer_args", "machine", "cxx_std", "libc")


#: What the recipes set only on a machine without a GPU (FORCE_CUDA=1 and the like): the
#: same wheel either way, so not part of the key that travels (a GPU-less build box and
#: a GPU machine share builds).
_NO_GPU_ONLY = frozenset(k for r in RECIPES.values() for k in r.no_gpu_env)


#: The clang toolkit's compiler as its banner says (_sources/clang/store.py, compiler_id):
#: ``clang 22.1.8 + ptxas 12.8.93 (<this machine's paths' digest>)``.
_CLANG = re.compile(r"^\s*clang (\S+) \+ ptxas (\d+)\.(\d+)(?:\.\d+)*\b")


def compiler_release(compiler: Any) -> Any:
    """What of a compiler decides whether its wheels serve another machine: nvcc's
    ``13.0`` of ``13.0.88`` (or of ``13.0``); the clang toolkit's clang version and
    ptxas release, ``clang 22.1.8 + ptxas 12.8``, without its digest of this machine's
    paths; anything else (None, "(not fetched)") as it is."""
    if not isinstance(compiler, str):
        return compiler
    clang = _CLANG.match(compiler)
    if clang:
        return f"clang {clang[1]} + ptxas {int(clang[2])}.{int(clang[3])}"
    found = re.match(r"^\s*(\d+)\.(\d+)(?:\.\d+)*\s*$", compiler)
    return f"{int(found[1])}.{int(found[2])}" if found else compiler


def share_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a build key (:func:`wheelcuda._rules.buildkey.key_fields`) that
    decide whether its wheel serves another machine: the compiler as its release. Packages
    what it returned, it returns the same (a wheel's embedded fields pass through)."""
    out: dict[str, Any] = {}
    for name in _KEPT:
        value = fields.get(name)
        if name == "packages":  # a git+https://user:token@ URL's token stays here
            value = redact.args([str(v) for v in value or []])
        elif name == "installer_args":  # an index's token stays on this machine
            value = redact.args([str(a) for a in value or []])
        elif name == "variables":  # "build CUDA code without a GPU" changes no wheel
            value = dict(sorted((k, v) for k, v in (value or {}).items()
                                if k not in _NO_GPU_ONLY))
        out[name] = value
    release = fields["compiler_release"] if "compiler_release" in fields \
        else fields.get("compiler")
    out["compiler_release"] = compiler_release(release)
    return out


def _canonical(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def share_id(fields: Mapping[str, Any]) -> str:
    """16 hex characters of the sha256 of :func:`share_fields`, as canonical JSON."""
    return hashlib.sha256(_canonical(share_fields(fields))).hexdigest()[:16]


def local_label(share: str) -> str:
    """The local version label segment of a share id: ``wc`` and its first 12 hex
    characters (PEP 440: letters and digits; lowercase, as packaging normalizes it)."""
    if not re.fullmatch(r"[0-9a-f]{12,}", share):
        raise ValueError(f"not a share id: {share!r}")
    return f"{LABEL_PREFIX}{share[:12]}"


def other_format(embedded: Mapping[str, Any]) -> int | None:
    """The format of a wheel's :data:`KEY_FILE` when it is not this wheelcuda's
    (:data:`KEY_FORMAT`); None when it is."""
    found = embedded.get("format", 1)
    return None if found == KEY_FORMAT else found if isinstance(found, int) else -1


def matches(embedded: Mapping[str, Any], wanted_fields: Mapping[str, Any]) -> bool:
    """Whether a wheel's :data:`KEY_FILE` content is exactly the key wanted here: of this
    format, its fields equal :func:`share_fields` of ``wanted_fields`` and its id their
    digest."""
    fields = embedded.get("fields")
    if not isinstance(fields, Mapping) or other_format(embedded) is not None:
        return False
    wanted = share_fields(wanted_fields)
    return (_canonical(dict(fields)) == _canonical(wanted)
            and embedded.get("share_id") == share_id(wanted))
