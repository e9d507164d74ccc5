"""The tree's ``bin/ninja``: the longest compiles of a torch extension start first.

ninja starts the edges that are ready in the order of its manifest when they weigh the
same on the critical path (ninja 1.12+ weighs every edge 1; 1.13.2 seen here: three
independent compiles ran in manifest order with -j1). torch's cpp_extension writes its
``build.ninja`` with the sources in setup.py's order and runs ``ninja -v -j N`` in that
folder, so a long kernel listed last runs alone at the end while the other cores idle
(flash-attn's last minutes ran a few long files with the load under 5 of 16).

With ``WHEELCUDA_NINJA_ORDER`` naming a JSON file ``{"source basename": seconds}`` (the
wall times of the package's last build, from the profile kept with the key, else the
recipe table's guess; ``wheelcuda install`` writes it), or else by DEFAULT_ORDER beside
this file (every recipe's guess: a build through ``wheelcuda env`` or the build backend
sets no variable; an empty one turns the order off), the compile statements of a
manifest torch wrote are put longest first, the rest after them in their own order;
then the next ``ninja`` on PATH runs with the same arguments. Anything else (another
generator's manifest, ``-t`` tools, no order) runs as it is.

Standalone: copied into each tree's bin/ beside the nvcc wrapper; the standard library
only.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys

__all__ = ["DEFAULT_ORDER", "LOG_MARK", "ORDER_VAR", "main", "next_ninja", "reorder"]

ORDER_VAR = "WHEELCUDA_NINJA_ORDER"
#: The tree's own order file, beside this one (rules/tree.py NINJA_ORDER).
DEFAULT_ORDER = ".ninja-order.json"
#: The line written to WHEELCUDA_NVCC_LOG (the build's call log, which install reads) when
#: a manifest was put in order: install's summary says so.
LOG_MARK = "# wheelcuda: ninja ordered"
#: The rules torch's cpp_extension names its compile statements with.
_TORCH_RULES = ("compile", "cuda_compile", "sycl_compile")
_WORD = re.compile(r"(?:\$.|[^\s$])+")


def _blocks(text: str) -> list[str]:
    """The manifest cut into statements: each top-level line with the indented lines
    (its variables) after it (pure)."""
    blocks: list[str] = []
    for line in text.splitlines(keepends=True):
        if blocks and (line.startswith((" ", "\t")) or blocks[-1].endswith("$\n")):
            blocks[-1] += line
        else:
            blocks.append(line)
    return blocks


def _source(block: str) -> str | None:
    """The source a torch compile statement builds (``build OUT: cuda_compile SRC``),
    by its base name; None for any other statement (pure)."""
    if not block.startswith("build "):
        return None
    _, _, rest = block.partition(": ")
    # ninja's paths escape a space, a colon and a dollar with a dollar
    words = [re.sub(r"\$(.)", r"\1", w) for w in _WORD.findall(rest.split("\n", 1)[0])]
    if len(words) < 2 or words[0] not in _TORCH_RULES:
        return None
    return os.path.basename(words[1])


def reorder(text: str, seconds: dict[str, float]) -> str | None:
    """The manifest with torch's compile statements longest first (known times first,
    the unknown ones after them in their own order, every other statement where it
    was); None when it is not torch's or nothing would move (pure)."""
    done = _reordered(text, seconds)
    return done[0] if done else None


def _reordered(text: str, seconds: dict[str, float]) -> tuple[str, int] | None:
    """:func:`reorder`'s manifest, and how many compile statements it holds (pure)."""
    if "\ninclude " in text or "\nsubninja " in text or text.startswith(("include ",
                                                                            "subninja ")):
        return None
    blocks = _blocks(text)
    slots = [i for i, b in enumerate(blocks) if _source(b) is not None]
    if len(slots) < 2:
        return None
    compiles = [blocks[i] for i in slots]
    ranked = sorted(range(len(compiles)),
                    key=lambda i: (-seconds.get(_source(compiles[i]) or "", -1.0), i))
    if ranked == list(range(len(compiles))):
        return None
    for slot, i in zip(slots, ranked, strict=True):
        blocks[slot] = compiles[i]
    return "".join(blocks), len(compiles)


def _manifest(argv: list[str]) -> str | None:
    """The manifest ninja would read, or None for a tool (``-t``) or another file
    (``-f``) than build.ninja: those run as they are."""
    folder = "."
    args = iter(argv)
    for arg in args:
        if arg in ("-t", "-f", "--version", "-h", "--help", "-n") or arg.startswith(
                ("-t", "-f")):
            return None
        if arg == "-C":
            folder = next(args, ".")
        elif arg.startswith("-C"):
            folder = arg[2:]
    return os.path.join(folder, "build.ninja")


def _order(environ: dict[str, str], here: str) -> dict[str, float]:
    # set but empty: no order at all, not even the tree's own
    path = environ[ORDER_VAR] if ORDER_VAR in environ else os.path.join(here, DEFAULT_ORDER)
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): float(v) for k, v in data.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0}


def next_ninja(path: str, here: str) -> str | None:
    """The first ``ninja`` on ``path`` that is not this folder's (pure but for stat)."""
    here = os.path.realpath(here)
    for folder in path.split(os.pathsep):
        if not folder or os.path.realpath(folder) == here:
            continue
        candidate = os.path.join(folder, "ninja")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def main() -> None:
    argv = sys.argv[1:]
    here = os.path.dirname(os.path.abspath(__file__))
    real = next_ninja(os.environ.get("PATH", ""), here)
    if real is None:
        sys.stderr.write("wheelcuda: ninja was not found on PATH (after the tree's bin)\n"
                         "  fix: pip install ninja (in the environment that builds)\n")
        sys.exit(127)
    manifest = _manifest(argv)
    seconds = _order(dict(os.environ), here) if manifest else {}
    if manifest and seconds:
        # a manifest that cannot be read or written is built as it is: the order only
        # saves time, it never decides what is built
        with contextlib.suppress(OSError, UnicodeDecodeError):
            with open(manifest, encoding="utf-8") as f:
                text = f.read()
            done = _reordered(text, seconds)
            if done is not None:
                ordered, count = done
                tmp = f"{manifest}.wheelcuda-{os.getpid()}"
                with open(tmp, "w", encoding="utf-8") as f:
                    f.write(ordered)
                os.replace(tmp, manifest)
                sys.stderr.write(f"wheelcuda: ninja starts {count} compiles longest first "
                                 "(their seconds in the last build, or the recipe table's "
                                 "guess)\n")
                if os.environ.get("WHEELCUDA_NVCC_LOG"):
                    with open(os.environ["WHEELCUDA_NVCC_LOG"], "a", encoding="utf-8") as f:
                        f.write(f"{LOG_MARK} {count} compiles\n")
    os.execv(real, [real, *argv])  # noqa: S606 - argv list


if __name__ == "__main__":
    main()
