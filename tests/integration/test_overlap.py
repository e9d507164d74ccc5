"""Two extensions that setuptools compiles one file at a time (``use_ninja=False``, as
torch-cluster asks), built for real by `wheelcuda install` with the wheels' nvcc and the
system toolkit out of reach: each extension's compiles run side by side and its link
waits for them (_standalone/_overlap.py); the archs are the ones asked for and nothing
is left behind. Then one kernel with an error: the build fails with the compiler's
error, and the link names the object that was not made."""

from __future__ import annotations

import itertools
import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.integration import sandbox
from wheelcuda._standalone import _overlap

pytestmark = pytest.mark.integration

SETUP = textwrap.dedent('''\
    from setuptools import setup
    from torch.utils.cpp_extension import BuildExtension, CUDAExtension
    setup(name="many-ext", version="1.0", ext_modules=[
        CUDAExtension("ext_a", ["a.cpp", "a1.cu", "a2.cu"]),
        CUDAExtension("ext_b", ["b.cpp", "b1.cu"])],
        cmdclass={"build_ext": BuildExtension.with_options(use_ninja=False)})
    ''')
MODULE = textwrap.dedent('''\
    #include <Python.h>
    static PyModuleDef module = {{PyModuleDef_HEAD_INIT, "ext_{m}", nullptr, -1, nullptr}};
    PyMODINIT_FUNC PyInit_ext_{m}(void) {{ return PyModule_Create(&module); }}
    ''')
#: No torch header: the test is about when the compiles run, not what they compile.
KERNEL = "__global__ void k_{k}(float* x) {{ x[threadIdx.x] *= 2.0f; }}\n"


def _project(folder: Path, a2: str) -> Path:
    folder.mkdir()
    (folder / "setup.py").write_text(SETUP)
    for m in "ab":
        (folder / f"{m}.cpp").write_text(MODULE.format(m=m))
    (folder / "a1.cu").write_text(KERNEL.format(k="a1"))
    (folder / "a2.cu").write_text(a2)
    (folder / "b1.cu").write_text(KERNEL.format(k="b1"))
    return folder


def test_extensions_compile_side_by_side(wheelcuda_cmd: str, wheels_venv: Path,
                                         cuobjdump: str, tmp_path: Path) -> None:
    good = _project(tmp_path / "good", KERNEL.format(k="a2"))
    cache = tmp_path / "cache"
    # a compile pool of its own (TMPDIR's), which no other build on the machine fills,
    # and a small share of memory for each compile: two of them at once on 2 cores
    env = {"WHEELCUDA_INSTALLER": "pip", "WHEELCUDA_CACHE_DIR": str(cache),
           "TMPDIR": str(tmp_path), "WHEELCUDA_JOB_GB": "0.5"}
    install = f"{wheelcuda_cmd} install --python {wheels_venv} --arch 9.0"
    r = sandbox.shell(f"{install} {good} -- --no-deps --target {tmp_path}/t", tmp_path,
                      extra_env=env, timeout=1200)
    out = sandbox.assert_ok(r)
    sandbox.assert_no_system_toolkit(out + r.stderr)
    [record] = cache.glob("builds/*/build.json")
    profile = {Path(c["file"]).name: c for c in json.loads(record.read_text())["profile"]}
    assert sorted(profile) == ["a.cpp", "a1.cu", "a2.cu", "b.cpp", "b1.cu"]
    assert all(c["code"] == 0 for c in profile.values())

    def span(name: str) -> tuple[float, float]:
        return profile[name]["start"], profile[name]["start"] + profile[name]["wall"]

    # ext_a's three files: the next one started before the one before it ended
    starts = sorted(span(n) for n in ("a.cpp", "a1.cu", "a2.cu"))
    assert any(b[0] < a[1] for a, b in itertools.pairwise(starts)), starts
    # ext_b after ext_a's link: setuptools builds extensions one after another
    assert min(span("b.cpp")[0], span("b1.cu")[0]) >= max(e for _, e in starts), profile
    for ext in ("ext_a", "ext_b"):
        [so] = (tmp_path / "t").glob(f"{ext}.*.so")
        listed = subprocess.run([cuobjdump, "--list-elf", str(so)], capture_output=True,
                                text=True, check=True).stdout
        assert listed.count(".sm_90.cubin") == (2 if ext == "ext_a" else 1), listed
        assert "sm_" not in listed.replace(".sm_90.", ""), listed
    assert not list(tmp_path.rglob(f"*{_overlap.PENDING}"))


def test_a_failed_compile_fails_the_build_with_its_error(wheelcuda_cmd: str,
                                                         wheels_venv: Path,
                                                         tmp_path: Path) -> None:
    bad = _project(tmp_path / "bad", "__global__ void k_a2(float* x) {\n"
                                     "  x[0] = undeclared_thing;\n}\n")
    cache = tmp_path / "cache"
    env = {"WHEELCUDA_INSTALLER": "pip", "WHEELCUDA_CACHE_DIR": str(cache)}
    r = sandbox.shell(f"{wheelcuda_cmd} install --python {wheels_venv} --arch 9.0 {bad} "
                      f"-- --no-deps --target {tmp_path}/t", tmp_path, extra_env=env,
                      timeout=1200)
    assert r.returncode == 1, r.stderr[-3000:]
    tail = r.stderr.split("nothing was installed", 1)[1]
    assert "a2.cu:2: error: identifier \"undeclared_thing\" is undefined" in tail, tail
    log = Path(tail.split("the whole build's output: ", 1)[1].split()[0]).read_text()
    assert "wheelcuda-c++: a2.o was not made: its compile failed (exit" in log, log[-3000:]
    assert not (tmp_path / "t").exists() or not list((tmp_path / "t").glob("*.so"))
    assert not list(tmp_path.rglob(f"*{_overlap.PENDING}"))
