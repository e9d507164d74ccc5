"""Import an installed distribution's extensions as its users do, and list its .so files.

    usage: python -P corpus/probe.py DISTRIBUTION
    prints: PROBE {"modules": [...], "sos": [...], "errors": [...]}

Each top-level package that holds a .so is imported, not each .so: packages such as
torch-scatter load their libraries from __init__ and register their operators once, so
importing a library a second time by its own name fails where a user's import works.
Run with -P so that this folder is not on sys.path. The same probe serves corpus/run.py
and examples/gpu_corpus_routes.sh.
"""

import importlib
import importlib.metadata as md
import json
import sys

import torch  # noqa: F401  (first, as users import it: extensions link against it)

dist = md.distribution(sys.argv[1])
tops: list[str] = []
sos: list[str] = []
errors: list[str] = []
for f in dist.files or []:
    s = str(f)
    if s.endswith(".so") and not s.startswith(".."):
        sos.append(str(f.locate()))
        top = s.split("/", 1)[0].split(".", 1)[0]
        if top not in tops:
            tops.append(top)
for top in tops:
    try:
        importlib.import_module(top)
    except Exception as exc:
        errors.append(f"{top}: {type(exc).__name__}: {exc}"[:300])
print("PROBE " + json.dumps({"modules": tops, "sos": sos, "errors": errors}), flush=True)
