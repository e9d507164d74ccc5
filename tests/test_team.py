"""A team builds once: machine A builds and publishes to a real pypiserver
(authentication on); machine B, with no compiler anywhere, installs the same key from it.
Another arch, a changed source, a wheel whose key was tampered with, a hash mismatch,
a wrong password, a server that dies mid-download and an index that is down each make
B build (here: --no-fetch, so that "build" shows as the missing compiler), never
install a wrong wheel, and never show a traceback.

The installer is a fake uv that "builds" by dropping a small real wheel into its cache
(as uv does) and records each call; the rest is wheelcuda's own code."""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import fakes
from tests import pypi_server as ps
from tests.test_cli import run
from wheelcuda._team import rules_key as sharekey
from wheelcuda._team import store_wheelfile as wheelfile

FAKE_UV = r'''
import os, sys, zipfile, hashlib, base64
args = sys.argv[1:]
log = os.environ["FAKE_UV_LOG"]
with open(log, "a") as f:
    f.write(" ".join(args) + "\n")
    team = sorted(k for k in os.environ if k.startswith(("WHEELCUDA_INDEX", "WHEELCUDA_PUBLISH")))
    if team:
        f.write("LEAKED " + " ".join(team) + "\n")
if args[:2] == ["cache", "prune"]:
    sys.exit(0)
spec = args[-1]
if spec.endswith(".whl"):
    sys.exit(int(os.environ.get("FAKE_UV_WHEEL_RC", "0")))  # installing a kept wheel
if "cuda-toolkit" in " ".join(args):
    sys.exit(3)                      # no compiler fetch in these tests
cache = os.environ["UV_CACHE_DIR"]
os.makedirs(os.path.join(cache, "built"), exist_ok=True)
name, version = "demo_ext", "1.0.0"
info = f"{name}-{version}.dist-info"
meta = f"Metadata-Version: 2.1\nName: demo-ext\nVersion: {version}\n"
tags = "Wheel-Version: 1.0\nGenerator: fake\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
files = {f"{name}.py": b"X = 1\n", f"{info}/METADATA": meta.encode(),
         f"{info}/WHEEL": tags.encode()}
def digest(data):
    raw = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + raw.decode()
record = "".join(f"{p},{digest(d)},{len(d)}\n" for p, d in files.items()) + f"{info}/RECORD,,\n"
files[f"{info}/RECORD"] = record.encode()
with zipfile.ZipFile(os.path.join(cache, "built", f"{name}-{version}-py3-none-any.whl"), "w") as z:
    for p, d in files.items():
        z.writestr(p, d)
'''


def _project(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pyproject.toml").write_text('[project]\nname = "demo-ext"\nversion = "1.0.0"\n')
    (folder / "kernel.cu").write_text("__global__ void k() {}\n")
    return folder


class Machines:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.ext = _project(tmp / "ext")
        self.a = fakes.user_env(tmp / "a")  # torch and a (fake) compiler set
        site_b = fakes.build_needs(fakes.torch(tmp / "b" / "site"))
        self.b = fakes.python(tmp / "b", [site_b])  # torch, no compiler anywhere
        self.log = tmp / "uv.log"
        self.env = {**fakes.uv_on_path(tmp, FAKE_UV), "FAKE_UV_LOG": str(self.log)}

    def install(self, machine: str, *args: str, cache: str | None = None
                ) -> tuple[int, str]:
        self.log.write_text("")
        py = self.a if machine == "a" else self.b
        env = {**self.env, "WHEELCUDA_CACHE_DIR": str(self.tmp / f"cache-{cache or machine}")}
        r = run("install", "--python", str(py), *args, str(self.ext), env=env)
        assert "Traceback" not in r.stderr, r.stderr
        return r.returncode, r.stderr

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ps.Server]:
    with ps.pypiserver(tmp_path / "index") as running:
        yield running


def _authed(url: str) -> str:
    return url.replace("http://", f"http://{ps.USER}:{ps.PASSWORD}@")


def _published(m: Machines, server: ps.Server) -> Path:
    code, err = m.install("a", "--arch", "9.0", "--publish", _authed(server.url))
    assert code == 0, err
    assert "published demo_ext-1.0.0+wc" in err, err
    [wheel] = list(server.packages.glob("demo_ext-1.0.0+wc*.whl"))
    return wheel


def test_b_installs_what_a_built_and_builds_what_differs(tmp_path: Path,
                                                         server: ps.Server) -> None:
    m = Machines(tmp_path)
    wheel = _published(m, server)
    assert any("pip install" in c and str(m.ext) in c for c in m.calls())  # A built
    index = ["--index", _authed(server.simple)]

    code, err = m.install("b", "--arch", "9.0", *index)
    assert code == 0, err
    assert "found this build (wc" in err and "nothing to compile" in err
    assert "installed demo-ext" in err and "from wheelcuda's wheel cache" in err
    assert not any("cuda-toolkit" in c for c in m.calls())  # no compiler fetched on B
    [call] = [c for c in m.calls() if "pip install" in c]
    assert call.endswith(".whl") and wheel.name in call
    assert ps.PASSWORD not in err

    # what B took from the index is not published again from B (it is A's build)
    env_b = {**m.env, "WHEELCUDA_CACHE_DIR": str(tmp_path / "cache-b")}
    again = run("publish", "--all", "--publish", _authed(server.url), env=env_b)
    assert "its wheels came from an index" in again.stderr
    assert len(list(server.packages.glob("*.whl"))) == 1

    # a second install on B takes its own wheel cache: the index is not asked again
    code, err = m.install("b", "--arch", "9.0", *index)
    assert code == 0 and "found this build" not in err and "wheel cache" in err

    # another arch, or a changed source: another key, so B builds (no compiler: it says so)
    for args in (["--arch", "12.0"], ["--arch", "9.0"]):
        if args[1] == "9.0":
            (m.ext / "kernel.cu").write_text("__global__ void k2() {}\n")
        code, err = m.install("b", *args, "--no-fetch", *index, cache="b2")
        assert code == 1 and "found this build" not in err
        assert "missing CUDA 13 wheels" in err, err


def test_a_second_publisher_is_not_an_error(tmp_path: Path, server: ps.Server) -> None:
    m = Machines(tmp_path)
    _published(m, server)
    env = {**m.env, "WHEELCUDA_CACHE_DIR": str(tmp_path / "cache-a")}
    r = run("publish", "--all", "--publish", _authed(server.url), env=env)
    assert r.returncode == 0, r.stderr
    assert "already on the index: demo_ext-1.0.0+wc" in r.stderr
    assert ps.PASSWORD not in r.stderr  # the URL is shown without its credentials
    bad = run("publish", "--all", "--publish", server.url, env=env)  # no credentials
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert "could not publish" in bad.stderr


def _tampered(wheel: Path, into: Path) -> Path:
    """The same file name, another key inside."""
    out = into / wheel.name
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename.endswith(sharekey.KEY_FILE):
                key = json.loads(data)
                key["fields"]["archs"] = "12.0"
                data = json.dumps(key).encode()
            dst.writestr(item, data)
    return out


def _simple_page(name: str, filename: str, sha256: str) -> ps.Page:
    body = f'<a href="/files/{filename}#sha256={sha256}">{filename}</a>'.encode()
    return ps.Page(body)


@pytest.mark.parametrize("case", ["tampered key", "hash mismatch", "cut download",
                                  "wrong password", "index down"])
def test_b_never_installs_a_wrong_wheel(case: str, tmp_path: Path, server: ps.Server) -> None:
    m = Machines(tmp_path)
    wheel = _published(m, server)
    body = wheel.read_bytes()
    sha = hashlib.sha256(body).hexdigest()
    if case == "tampered key":
        bad = _tampered(wheel, tmp_path)
        body, sha = bad.read_bytes(), hashlib.sha256(bad.read_bytes()).hexdigest()
    routes = {"/simple/demo-ext/": _simple_page("demo-ext", wheel.name,
                                                "0" * 64 if case == "hash mismatch" else sha),
              f"/files/{wheel.name}": ps.Page(body, "application/octet-stream",
                                              cut=100 if case == "cut download" else None)}
    with ps.pages(routes) as pages:
        url = {"wrong password": server.simple.replace("http://", "http://team:wrong@"),
               "index down": f"http://127.0.0.1:{ps.free_port()}/simple/"}.get(
            case, f"{pages.url}/simple/")
        code, err = m.install("b", "--arch", "9.0", "--no-fetch", "--index", url)
    assert code == 1 and "found this build" not in err, err
    assert "warning: " in err and ("building it instead" in err or "building instead" in err)
    assert "missing CUDA 13 wheels" in err  # B went on to build
    assert not any(c.endswith(".whl") for c in m.calls())
    assert ":wrong@" not in err and ps.PASSWORD not in err  # no credentials shown
    shutil.rmtree(tmp_path / "cache-b", ignore_errors=True)


def test_doctor_says_what_is_configured_and_whether_it_answers(tmp_path: Path,
                                                               server: ps.Server) -> None:
    py = fakes.user_env(tmp_path)
    down = f"http://127.0.0.1:{ps.free_port()}/"
    env = {"WHEELCUDA_INDEX_URL": _authed(server.simple), "WHEELCUDA_PUBLISH_URL": down}
    r = run("doctor", "--json", "--python", str(py), "--arch", "9.0", env=env)
    team = json.loads(r.stdout)["team"]
    [index] = team["indexes"]
    assert index["answers"] and index["origin"] == "WHEELCUDA_INDEX_URL"
    assert ps.PASSWORD not in r.stdout and ":s3cret@" not in r.stdout
    assert team["publish"]["answers"] is False and "could not connect" in team["publish"]["why"]
    text = run("doctor", "--python", str(py), "--arch", "9.0", env=env).stdout
    assert "Team index" in text and "answers" in text and "DOES NOT ANSWER" in text
    wrong = run("doctor", "--json", "--python", str(py), "--arch", "9.0",
                env={"WHEELCUDA_INDEX_URL": server.simple.replace("http://", "http://x:y@")})
    assert json.loads(wrong.stdout)["team"]["indexes"][0]["answers"] is False


TINY_BACKEND = '''
import os, sys
sys.path.insert(0, os.environ["TINY_TESTS"])
from tests.pypi_server import tiny_wheel
from pathlib import Path

def get_requires_for_build_wheel(config_settings=None):
    return []

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with open(os.environ["TINY_LOG"], "a") as f:
        f.write("build_wheel\\n")
    return tiny_wheel(Path(wheel_directory), "demo_ext", "1.0.0").name
'''


def test_the_backend_publishes_and_hands_over(tmp_path: Path, server: ps.Server,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """`pip install ./ext` through wheelcuda.build_meta: on A the wheel built is
    published; on B (no compiler) get_requires asks for no compiler and build_wheel hands
    A's wheel over, unbuilt, at the project's own version, its key inside."""
    from wheelcuda import build_meta  # noqa: PLC0415

    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "tiny_backend.py").write_text(TINY_BACKEND)
    monkeypatch.syspath_prepend(str(mods))
    project = tmp_path / "ext"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "demo-ext"\nversion = "1.0.0"\n'
        '[tool.wheelcuda]\nbuild-backend = "tiny_backend"\n')
    monkeypatch.chdir(project)
    log = tmp_path / "backend.log"
    monkeypatch.setenv("TINY_LOG", str(log))
    monkeypatch.setenv("TINY_TESTS", str(Path(__file__).resolve().parents[1]))
    a = fakes.build_needs(fakes.cu13_site(fakes.torch(tmp_path / "a" / "site")))
    b = fakes.build_needs(fakes.torch(tmp_path / "b" / "site"))
    settings = {"wheelcuda.arch": "9.0"}

    monkeypatch.setattr(build_meta, "_python", lambda ctx: str(fakes.python(tmp_path / "a", [a])))
    monkeypatch.setenv("WHEELCUDA_PUBLISH_URL", _authed(server.url))
    built = build_meta.build_wheel(str(tmp_path / "dist-a"), settings)
    [published] = list(server.packages.glob("demo_ext-1.0.0+wc*.whl"))
    assert built == "demo_ext-1.0.0-py3-none-any.whl" and log.read_text() == "build_wheel\n"

    monkeypatch.delenv("WHEELCUDA_PUBLISH_URL")
    monkeypatch.setenv("WHEELCUDA_INDEX_URL", _authed(server.simple))
    monkeypatch.setattr(build_meta, "_python", lambda ctx: str(fakes.python(tmp_path / "b", [b])))
    wanted = build_meta.get_requires_for_build_wheel(settings)
    assert not any("cuda" in w for w in wanted), wanted
    got = build_meta.build_wheel(str(tmp_path / "dist-b"), settings)
    assert got == "demo_ext-1.0.0-py3-none-any.whl"  # the project's own version
    assert log.read_text() == "build_wheel\n"  # not built again
    key = wheelfile.read_key(tmp_path / "dist-b" / got)
    assert key is not None and published.name.split("+")[1].startswith(
        sharekey.local_label(key["share_id"]))
    # another arch: B's backend builds (here: asks for the compiler first)
    wanted = build_meta.get_requires_for_build_wheel({"wheelcuda.arch": "12.0"})
    assert any(w.startswith("cuda-toolkit[") for w in wanted), wanted


NVCC = Path("/usr/local/cuda-13.0/bin/nvcc")


def _fat_wheel(folder: Path, version: str, code: str) -> Path:
    """A wheel holding a real shared object with SASS for ``code`` (nvcc 13.0)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "k.cu").write_text("__global__ void k(float* x) { x[0] = 1.0f; }\n"
                                 'extern "C" void go(float* x) { k<<<1, 1>>>(x); }\n')
    import subprocess  # noqa: PLC0415

    subprocess.run([str(NVCC), "-shared", "-Xcompiler", "-fPIC", "-gencode",
                    f"arch=compute_{code},code=sm_{code}", "k.cu", "-o", "k.so"],
                   cwd=folder, check=True, capture_output=True)
    so = (folder / "k.so").read_bytes()
    return ps.tiny_wheel(folder / "out", "demo_ext", version, "cp311-cp311-linux_x86_64",
                         extra={"demo_ext/_C.cpython-311-x86_64-linux-gnu.so": so})


def _prebuilt_index(wheels: list[Path]) -> dict[str, ps.Page]:
    routes = {f"/files/{w.name}": ps.Page(w.read_bytes(), "application/octet-stream")
              for w in wheels}
    links = "".join(f'<a href="/files/{w.name}#sha256={ps.sha256(w)}">{w.name}</a>'
                    for w in wheels)
    routes["/simple/demo-ext/"] = ps.Page(links.encode())
    return routes


@pytest.mark.skipif(not NVCC.is_file(), reason="no CUDA 13.0 toolkit at /usr/local/cuda-13.0")
def test_prebuilt_wheels_are_judged_by_their_own_elf(tmp_path: Path) -> None:
    """--prebuilt, for the project at 1.0.0: of an index's fat wheels, the 1.0.0 one whose
    label names torch 2.14 and CUDA 13.0 and whose .so holds SASS for sm_90 is taken;
    the newer-labelled 1.0.0 with sm_80 only is downloaded, looked at and refused; one
    for CUDA 12.8, one of another version (0.9.0, with the right SASS) and a musllinux
    one are never downloaded. Without --prebuilt the index is not asked."""
    m = Machines(tmp_path)
    sm80 = _fat_wheel(tmp_path / "w1", "1.0.0+cu130torch2.14.1", "80")
    sm90 = _fat_wheel(tmp_path / "w2", "1.0.0+cu130torch2.14", "90")
    older = _fat_wheel(tmp_path / "w4", "0.9.0+cu130torch2.14", "90")
    other = ps.tiny_wheel(tmp_path / "w3", "demo_ext", "1.1.0+cu128torch2.14",
                          "cp311-cp311-linux_x86_64")
    musl = ps.tiny_wheel(tmp_path / "w5", "demo_ext", "1.0.0+cu130torch2.14.2",
                         "cp311-cp311-musllinux_1_2_x86_64")
    m.env["WHEELCUDA_INDEX_USERNAME"], m.env["WHEELCUDA_INDEX_PASSWORD"] = "team", "s3cret"
    with ps.pages(_prebuilt_index([sm80, sm90, older, other, musl])) as pages:
        code, err = m.install("b", "--arch", "9.0", "--no-fetch")
        assert code == 1 and pages.seen == []  # off unless named
        code, err = m.install("b", "--arch", "9.0", "--no-fetch",
                              "--prebuilt", f"{pages.url}/simple/")
        asked = [path for path, _ in pages.seen]
    assert code == 0, err
    assert f"not taking {sm80.name}" in err and "it holds SASS for sm_80" in err
    assert f"took the prebuilt {sm90.name}" in err and "SASS for sm_90" in err
    assert not {f"/files/{w.name}" for w in (other, older, musl)} & set(asked), asked
    assert all(auth is None for _, auth in pages.seen)  # the team's password stays home
    [call] = [c for c in m.calls() if "pip install" in c]
    assert call.endswith(sm90.name)
    # nor does it reach the installer, where any sdist's setup.py could read it
    assert not [c for c in m.calls() if c.startswith("LEAKED")], m.calls()


def test_a_prebuilt_wheel_of_another_version_is_never_taken(tmp_path: Path) -> None:
    """The index holds only 0.1.0: neither `demo-ext==2.0.0` nor the 1.0.0 project takes
    it, and a project whose version only a build tells does not look at all."""
    m = Machines(tmp_path)
    wheel = ps.tiny_wheel(tmp_path / "w", "demo_ext", "0.1.0+cu130torch2.14",
                          "cp311-cp311-linux_x86_64")
    dynamic = tmp_path / "dyn"
    dynamic.mkdir()
    (dynamic / "pyproject.toml").write_text('[project]\nname = "demo-ext"\n'
                                            'dynamic = ["version"]\n')
    env = {**m.env, "WHEELCUDA_CACHE_DIR": str(tmp_path / "cache-b")}
    with ps.pages(_prebuilt_index([wheel])) as pages:
        prebuilt = ("--prebuilt", f"{pages.url}/simple/")
        code, err = m.install("b", "--arch", "9.0", "--no-fetch", *prebuilt)
        assert code == 1 and "has no prebuilt demo-ext 1.0.0" in err, err
        for spec, said in (("demo-ext==2.0.0", "has no prebuilt demo-ext 2.0.0"),
                           (str(dynamic), "not looking for a prebuilt wheel")):
            r = run("install", "--python", str(m.b), "--arch", "9.0", "--no-fetch",
                    *prebuilt, spec, env=env)
            assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
            assert said in r.stderr, r.stderr
        asked = [path for path, _ in pages.seen]
    assert f"/files/{wheel.name}" not in asked
    assert not any(".whl" in c for c in m.calls())


@pytest.mark.skipif(not NVCC.is_file(), reason="no CUDA 13.0 toolkit at /usr/local/cuda-13.0")
def test_a_refused_prebuilt_wheel_leaves_the_cache(tmp_path: Path) -> None:
    """The installer refuses the adopted wheel: the entry goes with it, and the next
    install without --prebuilt does not try that wheel again (it builds: here the missing
    compiler, as --no-fetch says)."""
    m = Machines(tmp_path)
    sm90 = _fat_wheel(tmp_path / "w", "1.0.0+cu130torch2.14", "90")
    m.env["FAKE_UV_WHEEL_RC"] = "1"
    with ps.pages(_prebuilt_index([sm90])) as pages:
        code, err = m.install("b", "--arch", "9.0", "--no-fetch",
                              "--prebuilt", f"{pages.url}/simple/")
    assert code == 1 and f"took the prebuilt {sm90.name}" in err, err
    assert "is out of wheelcuda's wheel cache again" in err, err
    assert not list((tmp_path / "cache-b").glob("**/build.json"))
    code, err = m.install("b", "--arch", "9.0", "--no-fetch")
    assert code == 1 and not any(c.endswith(".whl") for c in m.calls()), m.calls()


def test_a_bare_name_is_neither_looked_up_nor_published(tmp_path: Path,
                                                        server: ps.Server) -> None:
    """`install demo-ext` where no index answers (offline) is whatever the index has
    when it does: its key names no source, so it is not taken from a team's index, nor
    published there (a bare name an index answers for is pinned first: test_pick.py)."""
    m = Machines(tmp_path)
    env = {**m.env, "WHEELCUDA_CACHE_DIR": str(tmp_path / "cache-bare"), "UV_OFFLINE": "1"}
    r = run("install", "--python", str(m.a), "--arch", "9.0", "--publish",
            _authed(server.url), "demo-ext", env=env)
    assert r.returncode == 0, r.stderr
    assert "published" not in r.stderr and not list(server.packages.glob("*.whl"))
    _published(m, server)  # the folder's build is on the index now
    r = run("install", "--python", str(m.b), "--arch", "9.0", "--no-fetch", "--index",
            _authed(server.simple), "demo-ext", env=env | {
                "WHEELCUDA_CACHE_DIR": str(tmp_path / "cache-bare-b")})
    assert "found this build" not in r.stderr and r.returncode == 1
