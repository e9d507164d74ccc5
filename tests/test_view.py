"""The stable paths a cached compile sees (_standalone/_view.py): decisions on real
folders; the compilers' hits through them are tests/integration/test_compile_cache.py's."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

from wheelcuda._standalone import _view


def _sdist(base: Path) -> tuple[Path, Path]:
    root, site = base / "build-x1y2/pkg-1.0", base / "env-z9/lib/python3.11/site-packages"
    (root / "csrc/sub").mkdir(parents=True)
    (root / "PKG-INFO").write_text("Name: pkg\nVersion: 1.0\n")
    (root / "csrc/k.cu").write_text('#include "k.h"\n')
    (root / "csrc/k.h").write_text("#pragma once\n")
    (site / "torch/include/c10").mkdir(parents=True)
    (site / "torch/include/c10/x.h").write_text("#pragma once\n")
    (site / "torch-2.10.0+cu128.dist-info").mkdir()
    (site / "torch-2.10.0+cu128.dist-info/RECORD").write_text("torch/include/c10/x.h,,\n")
    return root, site


def test_a_compile_sees_its_sdist_and_headers_at_stable_paths(tmp_path: Path) -> None:
    root, site = _sdist(tmp_path)
    views = tmp_path / "views"
    args = ["-c", f"{root}/csrc/k.cu", "-o", f"{root}/build/k.o", f"-I{site}/torch/include",
            "-isystem", f"{root}/csrc", "-MF", f"{root}/build/k.o.d"]
    p = _view.prepare(args, cwd=str(root / "build"), root=str(root), views=str(views),
                      name=("pkg", "1.0"))
    view = views / "src-pkg-1.0"
    source = Path(p.args[1])
    assert source == view / "csrc/k.cu" and not source.is_symlink()  # nvcc resolves links
    assert source.read_text() == '#include "k.h"\n'
    assert os.path.realpath(source) == str(source)
    assert (view / "csrc/k.h").read_text() == "#pragma once\n"  # a link into the build
    assert p.args[3] == f"{root}/build/k.o"  # what the compiler writes stays put
    snap = p.args[4][2:]
    assert snap.startswith(f"{views}/site-torch-2.10.0+cu128-") and "env-z9" not in snap
    assert (Path(snap) / "c10/x.h").read_text() == "#pragma once\n"
    assert p.args[6] == str(view / "csrc")
    # a hit's dependency file: the view's paths and the first build's target
    (root / "build").mkdir()
    Path(p.args[-1]).write_text(f"/elsewhere/build/k.o: {view}/csrc/k.cu \\\n {snap}/c10/x.h\n")
    p.finish()
    assert Path(p.args[-1]).read_text() == \
        f"{root}/build/k.o: {root}/csrc/k.cu \\\n {site}/torch/include/c10/x.h\n"


def test_another_folder_of_the_same_release_repoints_the_view_when_free(
        tmp_path: Path) -> None:
    first, _ = _sdist(tmp_path / "a")
    second, _ = _sdist(tmp_path / "b")
    views = str(tmp_path / "views")
    one = _view.prepare(["-c", f"{first}/csrc/k.cu"], cwd="/", root=str(first), views=views,
                        name=("pkg", "1.0"))
    # held by a running compile of the first folder: the second compiles at its own paths
    held = _view.prepare(["-c", f"{second}/csrc/k.cu"], cwd="/", root=str(second),
                         views=views, name=("pkg", "1.0"))
    assert held.args[1] == f"{second}/csrc/k.cu"
    held.finish()
    one.finish()
    two = _view.prepare(["-c", f"{second}/csrc/k.cu"], cwd="/", root=str(second),
                        views=views, name=("pkg", "1.0"))
    assert two.args[1] == f"{views}/src-pkg-1.0/csrc/k.cu"
    assert os.readlink(f"{views}/src-pkg-1.0/.root") == str(second)
    two.finish()


def test_a_build_folder_without_pkg_info_keeps_its_paths(tmp_path: Path) -> None:
    """A project's own checkout is at a path of its own already."""
    root, _ = _sdist(tmp_path)
    (root / "PKG-INFO").unlink()
    p = _view.prepare(["-c", f"{root}/csrc/k.cu"], cwd="/", root=str(root),
                      views=str(tmp_path / "views"), name=("pkg", "1.0"))
    assert p.args == ["-c", f"{root}/csrc/k.cu"] and p.locks == []


def test_the_lock_is_not_inherited(tmp_path: Path) -> None:
    """An sccache server a compile starts must not hold the view's lock for ever."""
    root, _ = _sdist(tmp_path)
    p = _view.prepare(["-c", f"{root}/csrc/k.cu"], cwd="/", root=str(root),
                      views=str(tmp_path / "views"), name=("pkg", "1.0"))
    [lock] = p.locks
    assert not os.get_inheritable(lock) and fcntl.fcntl(lock, fcntl.F_GETFD) & fcntl.FD_CLOEXEC
    p.finish()


def test_a_cache_that_cannot_be_written_leaves_the_compile_at_its_paths(
        tmp_path: Path) -> None:
    """Views that cannot be made (a read-only cache, a full disk: here a file where the
    folder would be, which stops root too) cost the hits, never the compile."""
    root, _ = _sdist(tmp_path)
    (tmp_path / "not-a-folder").write_text("")
    args = ["-c", f"{root}/csrc/k.cu", f"-I{root}/csrc"]
    p = _view.prepare(args, cwd="/", root=str(root), views=str(tmp_path / "not-a-folder/v"),
                      name=("pkg", "1.0"))
    assert p.args == args and p.locks == []
    p.finish()


def test_compiles_of_one_build_arriving_together_all_see_through_the_view(
        tmp_path: Path) -> None:
    """The view shows the last build; this build's compiles arrive at once: one that
    looked while another held the view for a moment still gets the view, repointed (it
    once gave up, and its compile missed)."""
    first, _ = _sdist(tmp_path / "a")
    second, _ = _sdist(tmp_path / "b")
    views = str(tmp_path / "views")
    _view.prepare(["-c", f"{first}/csrc/k.cu"], cwd="/", root=str(first), views=views,
                  name=("pkg", "1.0")).finish()
    # another compile holds the view (shared) for 0.2 s, as one that looks and lets go does
    fd = os.open(_view.lock_path(f"{views}/src-pkg-1.0"), os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_SH)
    threading.Timer(0.2, os.close, (fd,)).start()
    p = _view.prepare(["-c", f"{second}/csrc/k.cu"], cwd="/", root=str(second), views=views,
                      name=("pkg", "1.0"))
    assert p.args[1] == f"{views}/src-pkg-1.0/csrc/k.cu"
    assert os.readlink(f"{views}/src-pkg-1.0/.root") == str(second)
    p.finish()


def test_only_include_options_are_read_and_the_hosts_words_stay(tmp_path: Path) -> None:
    """What follows -Xcompiler is the host's; -isystem-after, -I- and -isystem=DIR (under
    the sysroot) are other options; nvcc's --include-path=a,b is each folder; an empty
    folder goes with its option, never leaving -Xcompiler to swallow the next word."""
    root, _ = _sdist(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    views = str(tmp_path / "views")
    args = ["-Xcompiler", f"-I{empty}", "-Xcompiler", "-isystem", "-Xcompiler", str(empty),
            "-isystem-after", str(empty), "-I-", f"-isystem={empty}",
            f"--include-path={empty},{root}/csrc", f"-I{empty}", "-c", f"{root}/csrc/k.cu",
            "-MF", "dep.d", "-o", "k.o"]
    p = _view.prepare(args, cwd=str(root), root=str(root), views=views, name=("pkg", "1.0"))
    view = f"{views}/src-pkg-1.0"
    assert p.args == ["-Xcompiler", f"-I{empty}", "-Xcompiler", "-isystem", "-Xcompiler",
                      str(empty), "-isystem-after", str(empty), "-I-", f"-isystem={empty}",
                      f"--include-path={view}/csrc", "-c", f"{view}/csrc/k.cu", "-MF",
                      "dep.d", "-o", "k.o"]
    assert p.depfile == "dep.d" and p.target == "k.o"
    p.finish()
    joined = _view.prepare(["-MMD", "-c", "x.cpp", "-o", "b/x.o"], cwd="/", root=None,
                           views=views, name=None)
    assert joined.depfile == "b/x.d"  # gcc's own name without -MF
    assert _view.prepare(["-MFy.d", "-c", "x.cpp"], cwd="/", root=None, views=views,
                         name=None).depfile == "y.d"
