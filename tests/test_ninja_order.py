"""The tree's ninja: torch's compiles longest first, by the last build's profile; and a
job's memory measured from it. The shim runs in front of the real ninja (the ninja
wheel, 1.13), which starts equal-weight edges in manifest order."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from wheelcuda import standalone
from wheelcuda.pipeline import buildplan
from wheelcuda.rules import jobs, packages, progress, tree
from wheelcuda.standalone import _ninja, _site

#: A manifest as torch's cpp_extension writes it (torch 2.14.1, two .cu and a .cpp).
TORCH_MANIFEST = """ninja_required_version = 1.3
cxx = c++
nvcc = /tree/bin/nvcc

cflags = -I/x
cuda_cflags = -I/x

rule compile
  command = {cmd}
  depfile = $out.d
  deps = gcc

rule cuda_compile
  depfile = $out.d
  deps = gcc
  command = {cmd}

build {out}/binding.o: compile {src}/binding.cpp
build {out}/fwd.o: cuda_compile {src}/fwd.cu
build {out}/bwd.o: cuda_compile {src}/bwd$ kernel.cu



"""


def _manifest(folder: Path, command: str = "echo x") -> str:
    return TORCH_MANIFEST.format(cmd=command, out=folder / "out", src=folder / "src")


def _starts(text: str) -> list[str]:
    return [line.split(": ", 1)[1].split(" ", 1)[1].replace("$ ", " ").rsplit("/", 1)[1]
            for line in text.splitlines() if line.startswith("build ")]


def test_torch_compiles_go_longest_first(tmp_path: Path) -> None:
    text = _manifest(tmp_path)
    ordered = _ninja.reorder(text, {"bwd kernel.cu": 140.0, "fwd.cu": 20.0, "binding.cpp": 7.0})
    assert ordered is not None
    assert _starts(ordered) == ["bwd kernel.cu", "fwd.cu", "binding.cpp"]
    # nothing but the order changes: the same lines, the rules and variables in place
    assert sorted(ordered.splitlines()) == sorted(text.splitlines())
    assert ordered.index("rule cuda_compile") < ordered.index("build ")


def test_unknown_files_keep_their_order_after_the_known(tmp_path: Path) -> None:
    ordered = _ninja.reorder(_manifest(tmp_path), {"fwd.cu": 20.0})
    assert ordered is not None and _starts(ordered) == ["fwd.cu", "binding.cpp", "bwd kernel.cu"]


@pytest.mark.parametrize("seconds", [{}, {"binding.cpp": 9.0, "fwd.cu": 5.0}])
def test_nothing_to_move_leaves_the_manifest(tmp_path: Path, seconds: dict[str, float]
                                             ) -> None:
    assert _ninja.reorder(_manifest(tmp_path), seconds) is None


def test_another_generators_manifest_is_left_alone() -> None:
    cmake = "include rules.ninja\nbuild a.o: CXX_COMPILER a.cpp\nbuild b.o: CXX_COMPILER b.cpp\n"
    assert _ninja.reorder(cmake, {"b.cpp": 9.0}) is None
    assert _ninja.reorder("build a.o: cc a.c\nbuild b.o: cc b.c\n", {"b.c": 9.0}) is None


def _tree_bin(tmp_path: Path) -> Path:
    """The shim as a tree has it: bin/ninja runs _ninja.py beside it."""
    bin_dir = tmp_path / "tree" / "bin"
    bin_dir.mkdir(parents=True)
    shutil.copy(_ninja.__file__, bin_dir / "_ninja.py")
    shim = bin_dir / "ninja"
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -IBS {bin_dir / '_ninja.py'} \"$@\"\n")
    shim.chmod(0o755)
    return bin_dir


def _real_ninja() -> str:
    found = shutil.which("ninja", path=os.path.dirname(sys.executable))
    if found is None:
        pytest.skip("no ninja beside this Python (the test extra brings it)")
    return found


@pytest.mark.parametrize("order", [True, False])
def test_the_real_ninja_starts_them_in_the_shims_order(tmp_path: Path, order: bool) -> None:
    """As torch runs it (``ninja -v -j1`` in the build folder): with the order file the
    longest compile starts first; without one, the manifest's order, untouched."""
    real = _real_ninja()
    build = tmp_path / "build"
    build.mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "src").mkdir()
    for name in ("binding.cpp", "fwd.cu", "bwd kernel.cu"):
        (tmp_path / "src" / name).write_text("")
    log = tmp_path / "started.txt"
    text = _manifest(tmp_path, f"echo '$in' >> {log} && touch $out")
    (build / "build.ninja").write_text(text)
    seconds = tmp_path / "order.json"
    seconds.write_text(json.dumps({"bwd kernel.cu": 140.0, "fwd.cu": 20.0}))
    env = {"PATH": f"{_tree_bin(tmp_path)}{os.pathsep}{os.path.dirname(real)}"
                   f"{os.pathsep}/usr/bin:/bin",
           **({_ninja.ORDER_VAR: str(seconds)} if order else {})}
    done = subprocess.run(["ninja", "-v", "-j", "1"], cwd=build, env=env, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    started = [os.path.basename(line.strip()) for line in log.read_text().splitlines()]
    assert started == (["bwd kernel.cu", "fwd.cu", "binding.cpp"] if order
                       else ["binding.cpp", "fwd.cu", "bwd kernel.cu"])
    assert ((build / "build.ninja").read_text() == text) is not order


def test_the_trees_own_order_serves_a_build_no_variable_orders(tmp_path: Path) -> None:
    """``wheelcuda env`` and the build backend set no order variable: the guess the tree
    holds beside its ninja orders the build; the variable, when set, wins."""
    real = _real_ninja()
    bin_dir = _tree_bin(tmp_path)
    (bin_dir / _ninja.DEFAULT_ORDER).write_text(json.dumps({"bwd kernel.cu": 140.0}))
    build = tmp_path / "build"
    for folder in (build, tmp_path / "out", tmp_path / "src"):
        folder.mkdir()
    for name in ("binding.cpp", "fwd.cu", "bwd kernel.cu"):
        (tmp_path / "src" / name).write_text("")
    text = _manifest(tmp_path, "touch $out")
    path = f"{bin_dir}{os.pathsep}{os.path.dirname(real)}{os.pathsep}/usr/bin:/bin"

    def ninja_starts(env: dict[str, str]) -> list[str]:
        (build / "build.ninja").write_text(text)
        done = subprocess.run(["ninja", "-j", "1"], cwd=build, env={"PATH": path, **env},
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        return _starts((build / "build.ninja").read_text())

    assert ninja_starts({}) == ["bwd kernel.cu", "binding.cpp", "fwd.cu"]
    mine = tmp_path / "order.json"
    mine.write_text(json.dumps({"fwd.cu": 9.0}))
    assert ninja_starts({_ninja.ORDER_VAR: str(mine)}) == ["fwd.cu", "binding.cpp",
                                                            "bwd kernel.cu"]
    # set but empty: no order at all
    assert ninja_starts({_ninja.ORDER_VAR: ""}) == ["binding.cpp", "fwd.cu", "bwd kernel.cu"]


def test_the_tree_holds_every_recipes_guess() -> None:
    order = packages.every_order()
    assert packages.first_order(["flash-attn"]).items() <= order.items()
    files = dict(tree.wrapper_files(sys.executable, "", "/tree",
                                    tuple((name, "") for name in tree.WRAPPER_MODULES),
                                    json.dumps(order)))
    assert json.loads(files[tree.NINJA_ORDER]) == order
    assert os.path.basename(tree.NINJA_ORDER) == _ninja.DEFAULT_ORDER  # beside the shim
    assert tree.NINJA_ORDER not in dict(tree.wrapper_files(sys.executable, "", "/tree", (),
                                                           json.dumps(order)))


def test_no_ninja_after_the_tree_says_so(tmp_path: Path) -> None:
    done = subprocess.run([str(_tree_bin(tmp_path) / "ninja"), "--version"],
                          env={"PATH": str(tmp_path / "tree" / "bin")}, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 127 and "fix: pip install ninja" in done.stderr
    assert "Traceback" not in done.stderr


def test_tools_and_other_manifests_run_as_they_are() -> None:
    assert _ninja._manifest(["-t", "compdb"]) is None
    assert _ninja._manifest(["-f", "other.ninja"]) is None
    assert _ninja._manifest(["-C", "dir", "-v"]) == os.path.join("dir", "build.ninja")


def _compile(name: str, peak_gib: float, split: int | None = None,
             archs: tuple[str, ...] = ("sm_90",), wall: float = 10.0) -> progress.Compile:
    return progress.Compile(name, archs, wall, wall, int(peak_gib * 1024**2), 0, 0.0, split)


def test_a_jobs_memory_is_measured_from_the_profile() -> None:
    """flash-attn 2.8.3 peaked at about 4.3 GiB a job on the GPU machine (sm_90)."""
    profile = [_compile("a.cu", 4.3), _compile("b.cu", 2.0)]
    assert progress.measured_job_gb(profile, 1) == pytest.approx(4.3 * 1.25, abs=0.01)
    # a split call holds about two jobs' memory (rules/jobs.py): it counts as two
    assert progress.measured_job_gb([_compile("a.cu", 5.8, split=8)], 1) == \
        pytest.approx(2.9 * 1.25, abs=0.01)
    # a build for more archs than the profiled one: each arch another pass
    assert progress.measured_job_gb(profile, 2) == pytest.approx(4.3 * 2 * 1.25, abs=0.01)
    assert progress.measured_job_gb([], 1) is None


def test_measured_memory_lets_every_core_work() -> None:
    """On the GPU machine (16 cores, about 120 GiB free) the recipe's 8 GiB allowed 15
    jobs and no split; 4.3 GiB measured allows 16 jobs and room for splits."""
    free = 120 * 1024**3
    assert jobs.max_jobs(16, free, 8.0) == 15
    measured = progress.measured_job_gb([_compile("a.cu", 4.3)], 1)
    assert measured is not None
    assert jobs.max_jobs(16, free, measured) == 16
    assert jobs.pool(16, free, measured, 16)[1] > 0


def test_longest_first_takes_each_files_longest_run() -> None:
    profile = [_compile("/x/a.cu", 1.0, wall=5.0), _compile("/y/a.cu", 1.0, wall=9.0),
               _compile("b.cu", 1.0, wall=3.0)]
    assert progress.longest_first(profile) == {"a.cu": 9.0, "b.cu": 3.0}


def test_a_first_build_takes_the_recipes_guess() -> None:
    """No profile yet: the recipe's guess orders the build; a profile of other files
    (an editable rebuild of the binding alone) keeps the guess as it is beside them."""
    guess = packages.first_order(["flash-attn"])
    assert len(guess) == 72  # flash-attn 2.8.3's kernel files: 3 kinds x 6 hdims x 2 x 2
    assert progress.longest_first([], guess) == guess
    top = max(guess, key=guess.__getitem__)
    assert top.startswith("flash_fwd_split_") and "causal" not in top  # listed last
    assert progress.longest_first([_compile("a.cu", 1.0, wall=5.0)], guess) == \
        {"a.cu": 5.0, **guess}
    assert packages.first_order(["causal-conv1d", None]) == {}


def test_a_partial_profile_keeps_the_guess_for_what_it_lacks() -> None:
    """An editable rebuild measured two files: the others keep their guess, scaled by the
    median measured/guess ratio, so a long unmeasured file still starts early."""
    guess = {"long.cu": 200.0, "mid.cu": 100.0, "short.cu": 10.0, "tiny.cu": 5.0}
    profile = [_compile("mid.cu", 1.0, wall=50.0), _compile("short.cu", 1.0, wall=5.0),
               _compile("tiny.cu", 1.0, wall=5.0)]
    order = progress.longest_first(profile, guess)
    assert order == {"long.cu": 100.0, "mid.cu": 50.0, "short.cu": 5.0, "tiny.cu": 5.0}
    assert max(order, key=order.__getitem__) == "long.cu"


def _tree_with_site(tmp_path: Path) -> tuple[Path, Path]:
    """A tree's bin/ninja and site/sitecustomize.py, as wrapper_files lays them out."""
    home = tmp_path / "tree"
    for path, text in tree.wrapper_files(sys.executable, "", str(home),
                                         tuple((name, standalone.source(name))
                                               for name in tree.WRAPPER_MODULES)):
        (home / path).parent.mkdir(parents=True, exist_ok=True)
        (home / path).write_text(text)
    (home / tree.NINJA_SHIM).chmod(0o755)
    return home / "bin", home / "site"


@pytest.mark.parametrize("order", [True, False])
def test_the_trees_sitecustomize_puts_its_ninja_first(tmp_path: Path, order: bool) -> None:
    """uv puts the build environment's bin first on PATH, where the ninja wheel is: the
    tree's sitecustomize puts the tree's bin back in front in the build's Python, so
    torch's plain `ninja` is the tree's; without an order it changes nothing. A
    sitecustomize further along the path still runs."""
    bin_dir, site = _tree_with_site(tmp_path)
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "ninja").write_text("#!/bin/sh\n")
    (venv_bin / "ninja").chmod(0o755)
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import os\nos.environ['OTHER_RAN'] = '1'\n")
    path = os.pathsep.join([str(venv_bin), str(bin_dir), "/usr/bin", "/bin"])
    env = {"PATH": path, "PYTHONPATH": os.pathsep.join([str(site), str(other)]),
           **({"WHEELCUDA_NINJA_ORDER": str(tmp_path / "order.json")} if order else {})}
    out = subprocess.run([sys.executable, "-c", "import os, shutil; print(shutil.which("
                          "'ninja')); print(os.environ.get('OTHER_RAN'))"],
                         env=env, capture_output=True, text=True, check=True).stdout.split()
    assert out == [str((bin_dir if order else venv_bin) / "ninja"), "1"]


def test_the_trees_sitecustomize_keeps_path_once() -> None:
    assert _site.front("/v/bin:/t/bin:/usr/bin", "/t/bin") == "/t/bin:/v/bin:/usr/bin"
    assert _site.front("", "/t/bin") == "/t/bin"


def test_the_order_goes_with_the_site_folder_alone(tmp_path: Path) -> None:
    """install's order variables: the file, and the tree's site folder as the whole
    PYTHONPATH (a build never gets the user's: it could import another torch); nothing
    without an order or a tree."""
    r = SimpleNamespace(home=SimpleNamespace(path=tmp_path / "tree"))
    order = tmp_path / "ninja-order.json"
    assert buildplan.order_variables(r, order) == {  # type: ignore[arg-type]
        "WHEELCUDA_NINJA_ORDER": str(order), "PYTHONPATH": str(tmp_path / "tree" / "site")}
    assert buildplan.order_variables(r, None) == {}  # type: ignore[arg-type]
    assert buildplan.order_variables(SimpleNamespace(home=None), order) == {}  # type: ignore[arg-type]
    assert _site.ORDER_VAR == _ninja.ORDER_VAR  # the copy in the tree reads the same name
    assert tree.SITE.startswith("site/")


def test_the_trees_sitecustomize_keeps_an_empty_entry() -> None:
    """An empty PATH entry means the current folder: kept where it was."""
    assert _site.front("/v/bin::/t/bin", "/t/bin") == "/t/bin:/v/bin:"
