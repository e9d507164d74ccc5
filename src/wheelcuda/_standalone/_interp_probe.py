"""Run inside the TARGET interpreter (any Python 3.8+), standalone: prints one JSON line.

It may not import wheelcuda, which is usually not installed there. wheelcuda passes
this file's text with ``python -E -c`` so PYTHONPATH cannot change what it sees.
"""

import json
import os
import sys
import sysconfig


def describe():  # type: ignore[no-untyped-def]
    """The interpreter's identity and the folders its imports search, stdlib left out."""
    paths = sysconfig.get_paths()
    stdlib = {os.path.normcase(os.path.realpath(paths[k])) for k in ("stdlib", "platstdlib")}
    dirs = []
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        real = os.path.normcase(os.path.realpath(entry))
        if real in stdlib or os.path.basename(entry) == "lib-dynload":
            continue
        if entry not in dirs:
            dirs.append(entry)
    return {
        "executable": sys.executable,
        "prefix": sys.prefix,
        "base_prefix": sys.base_prefix,
        "version": list(sys.version_info[:3]),
        "site_dirs": dirs,
        "purelib": paths["purelib"],
    }


if __name__ == "__main__":
    print(json.dumps(describe()))  # type: ignore[no-untyped-call]
