"""A build you can watch and a failed build you can read, for real: `wheelcuda install`
of a two-file extension with the wheels' nvcc (system toolkit out of reach), its
progress lines off a terminal, its profile kept with the key and shown by `cache show`;
then the same extension with an error in one file: the error as file:line, and the log
that outlives the failed build."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.integration import sandbox

pytestmark = pytest.mark.integration

SETUP = textwrap.dedent('''\
    from setuptools import setup
    from torch.utils.cpp_extension import BuildExtension, CUDAExtension
    setup(name="two-kernels", version="1.0", ext_modules=[CUDAExtension(
        "two_kernels", ["module.cpp", "first.cu", "second.cu"])],
        cmdclass={"build_ext": BuildExtension})
    ''')
#: No torch header in the kernels: the test is about what wheelcuda says, not torch.
KERNEL = "__global__ void {name}(float* x) {{ x[threadIdx.x] *= 2.0f; }}\n"
MODULE = textwrap.dedent('''\
    #include <Python.h>
    static PyModuleDef module = {PyModuleDef_HEAD_INIT, "two_kernels", nullptr, -1, nullptr};
    PyMODINIT_FUNC PyInit_two_kernels(void) { return PyModule_Create(&module); }
    ''')


def _project(folder: Path, second: str) -> Path:
    folder.mkdir()
    (folder / "setup.py").write_text(SETUP)
    (folder / "module.cpp").write_text(MODULE)
    (folder / "first.cu").write_text(KERNEL.format(name="first"))
    (folder / "second.cu").write_text(second)
    return folder


def test_progress_profile_and_a_failure_that_says_why(wheelcuda_cmd: str, wheels_venv: Path,
                                                      tmp_path: Path) -> None:
    good = _project(tmp_path / "good", KERNEL.format(name="second"))
    cache = tmp_path / "cache"
    env = {"WHEELCUDA_INSTALLER": "pip", "WHEELCUDA_CACHE_DIR": str(cache), "MAX_JOBS": "2"}
    install = f"{wheelcuda_cmd} install --python {wheels_venv} --arch 9.0"
    r = sandbox.shell(f"{install} {good} -- --no-deps --target {tmp_path}/t1\n"
                      f"{wheelcuda_cmd} cache show two-kernels", tmp_path, extra_env=env,
                      timeout=1200)
    out = sandbox.assert_ok(r)
    lines = r.stderr.splitlines()
    # off a terminal: one line per finished compile, counted
    for name in ("first.cu", "second.cu"):
        assert any(line.startswith("wheelcuda: [") and f"compiled {name} (sm_90) in " in line
                   for line in lines), r.stderr
    assert "Successfully installed" not in out + r.stderr  # pip's own words: in the log
    [record] = cache.glob("builds/*/build.json")
    profile = json.loads(record.read_text())["profile"]
    # the host compile is in the profile too: it holds a core and memory like the others
    assert sorted(Path(c["file"]).name for c in profile) == ["first.cu", "module.cpp",
                                                             "second.cu"]
    assert all(c["code"] == 0 and c["wall"] > 0 and c["cpu"] > 0 and c["peak_kb"] > 0
               for c in profile), profile
    assert {Path(c["file"]).name: c["archs"] for c in profile} == {
        "first.cu": ["sm_90"], "second.cu": ["sm_90"], "module.cpp": []}, profile
    assert "3 compiles in " in out and "longest: " in out and "floor on " in out, out
    assert [p.suffix for p in cache.glob("logs/*")] == [".log"]  # events became the profile
    sandbox.assert_no_system_toolkit(out + r.stderr)

    # another key of the same package (another arch), through uv: the build gets the
    # seconds each file took in the first one, which the compile pool starts the longest
    # of first (the order itself: tests/test_pool.py, with real concurrent compiles)
    again = f"{wheelcuda_cmd} install --python {wheels_venv} --arch 8.0"
    r = sandbox.shell(f"{again} {good} -- --no-deps --target {tmp_path}/t3", tmp_path,
                      extra_env={**env, "WHEELCUDA_INSTALLER": "uv"}, timeout=1200)
    sandbox.assert_ok(r)
    assert "compiled first.cu (sm_80)" in r.stderr, r.stderr
    [order] = cache.glob("builds/*/compile-order.json")
    assert set(json.loads(order.read_text())) == {"first.cu", "module.cpp", "second.cu"}

    bad = _project(tmp_path / "bad", "__global__ void second(float* x) {\n"
                                     "  x[0] = undeclared_thing;\n}\n")
    r = sandbox.shell(f"{install} {bad} -- --no-deps --target {tmp_path}/t2", tmp_path,
                      extra_env=env, timeout=1200)
    assert r.returncode != 0 and "Traceback" not in r.stderr.split("wheelcuda: pip exited")[-1]
    tail = r.stderr.split("nothing was installed", 1)[1]
    assert "the first compiler errors:" in tail, r.stderr
    assert "second.cu:2: error: identifier \"undeclared_thing\" is undefined" in tail, tail
    shown = Path(tail.split("the whole build's output: ", 1)[1].split()[0])
    assert shown.is_file() and shown.parent == cache / "logs"  # it outlives the failed entry
    assert "undeclared_thing" in shown.read_text()
    # its events go (a killed build's stayed, and a reused pid made it run for ever)
    assert not list(cache.glob("logs/*.jsonl"))
