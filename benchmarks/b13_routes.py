"""B13: the first user's own route against `wheelcuda install`, on the GPU machine.

The runs: examples/b13_gpu.sh on the GPU machine (16 cores, 125 GiB), cold each time, the
same tree for both routes, kernels checked after each build; their `B13 {json}` lines are
kept in benchmarks/b13_gpu.json with the date, the commit and the lease they ran in (this
machine has no GPU to run them again).

flash-attn's build takes 18 minutes there, more than a session's device time allows beside
the others, so its row is a model: the compile pool's own decisions (_standalone/_pool.py
``decide``, the code every compile runs) over flash-attn's 72 files with the seconds each
took in its H200 build (the recipe table's order guess), started by ninja in setup.py's
order, MAX_JOBS and the memory a job holds as each route sets them. Both routes get them
from the same places (_rules/jobs.py for MAX_JOBS; the tree's facts or the build's profile
for the memory), so the model shows what the pool does with them and the floor it comes to;
the compile times are the measured ones, splits as they were then.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

from wheelcuda._data.recipes import RECIPES
from wheelcuda._rules import jobs
from wheelcuda._standalone import _pool

__all__ = ["RUNS", "b13_rows", "flash_attn_model", "schedule"]

RUNS = Path(__file__).resolve().parent / "b13_gpu.json"
_GIB = 1024**3
#: The H200 machine: 16 cores, 125 GiB, about 120 available to builds.
CORES, AVAILABLE_GIB = 16, 120


def setup_py_order() -> list[str]:
    """flash-attn 2.8.3's setup.py lists its kernels forward, backward, then split-KV
    forward, each non-causal then causal, by head dim, fp16 before bf16 (read from it)."""
    return [f"{kind}_hdim{hdim}_{dtype}{causal}_sm80.cu"
            for kind in ("flash_fwd", "flash_bwd", "flash_fwd_split")
            for causal in ("", "_causal") for hdim in (32, 64, 96, 128, 192, 256)
            for dtype in ("fp16", "bf16")]


def schedule(files: Sequence[tuple[str, float]], *, max_jobs: int, job_gb: float,
             cores: int = CORES, available_gib: float = AVAILABLE_GIB) -> float:
    """The wall time of a build whose ninja keeps ``max_jobs`` compiles started (in the
    order given) and whose compiles the pool admits (:func:`_pool.decide`): each waiting
    compile asks as the real one does; a compile takes its seconds once admitted."""
    order = dict(files)
    pending = list(files)
    waiting: list[_pool.Ask] = []
    running: dict[int, tuple[float, _pool.Held]] = {}  # pid -> (ends at, held)
    now, pid = 0.0, 0
    unit = int(job_gb * _GIB)
    while pending or waiting or running:
        while pending and len(waiting) + len(running) < max_jobs:  # ninja starts more
            name, _ = pending.pop(0)
            pid += 1
            waiting.append(_pool.Ask(pid, 1, now + pid * 1e-6, order[name], unit, 1, True,
                                     name))
        admitted = True
        while admitted:  # each waiting compile looks, as they do every half second
            admitted = False
            for ask in list(waiting):
                grant = _pool.decide(ask, waiting, [h for _, h in running.values()],
                                     cores=cores, budget=int(available_gib * _GIB))
                if grant is not None:
                    waiting.remove(ask)
                    tokens = grant.threads if grant.threads > ask.threads else 0
                    running[ask.pid] = (now + ask.seconds,
                                        _pool.Held(ask.pid, grant.memory, tokens, ask.name))
                    admitted = True
                    break
        if not running:
            break
        first = min(running, key=lambda p: running[p][0])
        now = running.pop(first)[0]
    return now


def flash_attn_model() -> dict[str, float]:
    """Install's and the uv route's flash-attn builds through the pool, modelled."""
    recipe = RECIPES["flash-attn"]
    assert recipe.order is not None and recipe.job_gb is not None
    files = [(name, recipe.order[name]) for name in setup_py_order()]
    # both routes: MAX_JOBS from _rules/jobs.py (uv-config writes it, install sets it); the
    # memory a job holds from the tree's facts (the recipe's), as neither has a profile yet
    max_jobs = int(jobs.for_build({}, CORES)["MAX_JOBS"])
    uv = schedule(files, max_jobs=max_jobs, job_gb=recipe.job_gb)
    ours = schedule(files, max_jobs=max_jobs, job_gb=recipe.job_gb)
    # the pool without its order (a queue in the order ninja started them): what longest
    # first buys on this package
    plain = schedule(files, max_jobs=CORES, job_gb=recipe.job_gb)
    cpu = sum(s for _, s in files)
    return {"b13_fa_uv": uv, "b13_fa_install": ours, "b13_fa_plain": plain,
            "b13_fa_floor": max(cpu / CORES, *(s for _, s in files)),
            "b13_fa_max_jobs": float(max_jobs)}


def _runs() -> list[dict[str, object]]:
    return list(json.loads(RUNS.read_text()))


def _pair(rows: list[dict[str, object]], package: str, route: str) -> tuple[int, int, str]:
    """A package's uv route and install as run on one machine in one lease (a lease that
    ran only one of them is no pair: two machines of one kind differed by a third in the
    same compiles), the walls summed over such leases, and when."""
    def walls(lease: object, prefix: str) -> list[int]:
        return [int(str(r["wall_s"])) for r in rows if r["package"] == package
                and r.get("lease") == lease and str(r["route"]).startswith(prefix)]
    leases = [x for x in dict.fromkeys(r.get("lease") for r in rows)
              if walls(x, route) and walls(x, "wheelcuda install")]
    theirs = sum(sum(walls(x, route)) for x in leases)
    ours = sum(sum(walls(x, "wheelcuda install")) for x in leases)
    machines = sorted({str(r["machine"]).split(";")[0] for r in rows if r.get("lease") in leases})
    when = ", ".join(sorted({f"{r['date']}, {r['commit']}" for r in rows
                             if r["package"] == package and r.get("lease") in leases}))
    return theirs, ours, f"{'; '.join(machines)}: {when}"


def b13_rows() -> list[tuple[str, str, str, str, str]]:
    rows = _runs()
    out = []
    for package, route, how in (
            ("causal-conv1d", "uv add", "`uv add` in a uv project after `uv-config --write "
                                        "pyproject.toml`"),
            ("mamba-ssm", "uv pip install", "`uv pip install` after `uv-config --write "
                                           "uv.toml`")):
        theirs, ours, when = _pair(rows, package, route)
        out.append(("B13", f"{package}, isolation on: {how} vs `wheelcuda install`, one "
                           f"machine, cold, kernels match the package's reference ({when})",
                    f"{theirs} s / {ours} s", f"{theirs / ours:.2f}", "<= 1.15"))
    m = flash_attn_model()
    out.append(("B13", "flash-attn 2.8.3 modelled (the pool's decisions over its 72 files' "
                       "H200 seconds, 16 cores): the uv route vs install, MAX_JOBS "
                       f"{m['b13_fa_max_jobs']:.0f} and {RECIPES['flash-attn'].job_gb} GiB a "
                       "job on both",
                f"{m['b13_fa_uv']:.0f} s / {m['b13_fa_install']:.0f} s",
                f"{m['b13_fa_uv'] / m['b13_fa_install']:.2f}", "<= 1.15"))
    out.append(("B13", "the same model: longest first (ninja starting twice the cores) vs "
                       "the pool in ninja's order (MAX_JOBS = cores, setup.py's order)",
                f"{m['b13_fa_install']:.0f} s / {m['b13_fa_plain']:.0f} s",
                f"{m['b13_fa_install'] / m['b13_fa_plain']:.2f}", "reported"))
    out.append(("B13", "the same model vs its floor (CPU / 16, or the longest file)",
                f"{m['b13_fa_install']:.0f} s / {m['b13_fa_floor']:.0f} s",
                f"{m['b13_fa_install'] / m['b13_fa_floor']:.2f}", "reported"))
    assert all(math.isfinite(float(r[3])) for r in out)
    return out
