"""What install says after its build (pure): how many CUDA compiles the tree's nvcc
logged and how, what the compile cache did, what was installed, and the last line."""

from __future__ import annotations

from collections.abc import Sequence

from ..._probe import locate
from ..._rules import buildkey, compile_counts
from ..._standalone import _nvcc_wrapper, _progress
from .plan import Prepared


def cuda_compiles(calls: Sequence[str]) -> int:
    """How many of the nvcc wrapper's logged calls compiled (pure)."""
    return sum(1 for c in calls if any(w in _nvcc_wrapper.COMPILES for w in c.split()))

def compile_summary(calls: Sequence[str], compiler: str) -> str:
    """"3 CUDA compiles by nvcc 13.0.88, split-compile 2" from the nvcc wrapper's log
    (``compiler`` as the key names it); "" for none (pure)."""
    compiles = [words for words in (c.split() for c in calls)
                if any(w in _nvcc_wrapper.COMPILES for w in words)]
    if not compiles:
        return ""
    splits = sorted({w.split("=", 1)[1] for words in compiles for w in words
                     if w.startswith("--split-compile=")}, key=lambda v: (len(v), v))
    ordered = any(c.startswith(_progress.AHEAD_MARK) for c in calls)
    count = f"{len(compiles)} CUDA compile{'s' if len(compiles) != 1 else ''}"
    return f"{count} by {buildkey.compiler_name(compiler)}" + (
        f", split-compile {'/'.join(splits)}" if splits else "") + (
        ", started longest first" if ordered else "")


def with_hits(compiles: str, hits: dict[str, int] | None, calls: Sequence[str]) -> str:
    """The compile summary, with what the compile cache found and compiled, when asked."""
    return f"{compiles}; {compile_counts.said(hits, cuda_compiles(calls))}" if hits \
        else compiles


def unpruned_calls(calls: Sequence[str]) -> int:
    """How many compiles the nvcc wrapper left unpruned (link-time optimization) (pure)."""
    return sum(1 for c in calls if c.startswith(_nvcc_wrapper.UNPRUNED))

def line(p: Prepared, done: list[str], compiles: str, unpruned: int, took: str) -> str:
    """install's last line: what was installed, how long it took, and how (pure)."""
    r = p.resolved
    archs = ", ".join(f"sm_{a.number}" for a in r.archs)
    built = archs if not r.request.all_archs else "the package's own arch list (--all-archs)"
    if compiles and unpruned:
        built = (f"{built} and, in {unpruned} link-time-optimized compiles wheelcuda "
                 "left unpruned, every arch those asked for")
    how = (f"built {built} ({compiles})" if compiles
           else "from wheelcuda's wheel cache (nothing compiled)" if p.from_cache
           else "nothing compiled (already installed, or the key's installer cache had it)")
    return (f"installed {', '.join(done)} with {p.tool.name}{took}: {how}; "
            f"cache key {p.key}")

def installed(p: Prepared) -> list[str]:
    """``name==version`` of each package installed (the spec when its name is unknown),
    the editable ones marked."""
    r = p.resolved
    sources = p.given.sources or p.specs or ("",) * len(p.names)
    editable = set(p.given.editable)
    done = []
    for name, spec in zip(p.names, sources, strict=False):
        version = _version(r.target.site_dirs, name)
        shown = f"{name}=={version}" if version else (name or spec)
        done.append(f"{shown} (editable)" if spec in editable else shown)
    return done

def _version(site_dirs: Sequence[str], name: str | None) -> str | None:
    if not name:
        return None
    return locate.installed_version(site_dirs, name)

