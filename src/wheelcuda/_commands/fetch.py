"""``wheelcuda fetch``: bring the compiler set torch pins into wheelcuda's store.

Nothing is installed into the environment: the store (``<cache>/toolkits``) is shared by
every environment whose torch pins the same set, and ``env``, ``home`` and ``run`` use it
from then on, as ``install`` does after fetching it by itself.
"""

from __future__ import annotations

import argparse

from .. import _pipeline as pipeline
from .._context import Context
from .._data import catalog
from .._rules.checks import Kind
from .._sources import table as sources
from .common import add_toolkit, note, request

NAME = "fetch"
HELP = ("fetch the CUDA compiler set that torch pins into wheelcuda's store "
        "(nothing is installed into the environment); prints where it is")
SUMMARY = "fetch the compiler that torch pins into wheelcuda's store"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_toolkit(p)
    p.add_argument("--from", dest="source", metavar="DIR",
                   help="take NVIDIA's archives from this folder instead of downloading them "
                        "(the same size and sha256 checks)")


def main(args: argparse.Namespace, ctx: Context) -> int:
    r = pipeline.resolve(ctx, request(args, need_torch=True, need_archs=False, fetch=True,
                                      redist_from=args.source, action="fetching for"))
    r.raise_first(ignore=(Kind.HOST,))
    nvcc = r.toolkit.inventory.get(catalog.NVCC.name, r.toolkit.major)
    via = sorted(set(r.toolkit.found_via.values()))
    if r.toolkit.fetched:
        note(f"fetched the compiler set into {r.toolkit.fetched}")
    else:  # one source for every part speaks for itself; else the toolkit's source
        serving = sources.by_word(via[0] if len(via) == 1 else r.toolkit.source)
        note(serving.present(r.target.python, r.toolkit.description))
    if nvcc is not None:
        print(nvcc.folder)  # one line: where the compiler is, for $(wheelcuda fetch)
    return 0
