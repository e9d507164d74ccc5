"""A team's builds as wheel variants (PEP 825) that the real uv picks by the machine's GPU:
``wheelcuda publish --variants DIR`` writes them, a static server on 127.0.0.1 serves DIR as
uv's find-links, and uv 0.13.9 installs machine A's build on an sm_120 machine with the same
torch, and never on an sm_90 one, under another torch, or without its preview feature
(there it takes the index's own build). ``NV_VARIANT_PROVIDER_FORCE_SM_ARCH`` and
``..._CUDA_DRIVER_VERSION`` stand in for the GPU and its driver; torch is a tiny wheel of
the right name and version in a local folder, so nothing is downloaded."""

from __future__ import annotations

import functools
import http.server
import json
import os
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.pypi_server import tiny_wheel
from tests.test_cli import run
from tests.test_team import Machines
from wheelcuda._team import rules_key as sharekey
from wheelcuda._team import rules_variants as variants
from wheelcuda._team import store_wheelfile as wheelfile

TORCH = "2.10.0+cu128"
FIELDS: dict[str, Any] = {
    "packages": ["sha256:abc"], "torch": TORCH, "torch_cuda": "12.8",
    "compiler": "12.8.93", "archs": "12.0", "prune": True, "python": "cp311",
    "cxx11_abi": True, "variables": {}, "installer_args": [], "machine": "x86_64",
    "host_compiler": "gcc 12.2.0", "libc": "glibc 2.36"}
LABEL = sharekey.local_label(sharekey.share_id(FIELDS))
UV = Path(sys.executable).with_name("uv")
#: a machine with an sm_120 GPU and a CUDA 12.9 driver, as uv's NVIDIA provider reads them
SM120 = {"NV_VARIANT_PROVIDER_FORCE_SM_ARCH": "12.0",
         "NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION": "12.9"}


def test_properties_are_the_sass_archs_and_torchs_cuda() -> None:
    assert variants.properties({**FIELDS, "archs": "9.0;12.0+PTX"}) == [
        "nvidia :: sm_arch :: 90_real", "nvidia :: sm_arch :: 120_real",
        "nvidia :: cuda_version_lower_bound :: 12.8"]
    # a family-specific build keeps its suffix: uv gives such a value to no GPU
    assert variants.properties({**FIELDS, "archs": "12.0a"})[0] == \
        "nvidia :: sm_arch :: 120a_real"
    assert variants.torch_pin(FIELDS) == f"torch=={TORCH}"
    # PyPI's torch 2.10.0 calls itself 2.10.0+cu128: the pin is what installers know it
    # by, exactly, so neither ==2.10.0+cu128 (unmet there) nor 2.10.0+cu130 (met by ==)
    assert variants.torch_pin({**FIELDS, "torch_dist": "2.10.0"}) == "torch===2.10.0"


@pytest.mark.parametrize(("change", "said"), [
    ({"archs": ""}, "names no GPU archs"),
    ({"archs": "sm_x"}, "cannot be read"),
    ({"prune": False}, "--all-archs"),
    ({"torch_cuda": None}, "no CUDA version"),
    ({"torch": None}, "no torch version"),
])
def test_a_key_that_cannot_say_its_gpus_is_refused(change: dict[str, Any], said: str) -> None:
    with pytest.raises(variants.VariantError, match=said):
        variants.properties({**FIELDS, **change})
        variants.torch_pin({**FIELDS, **change})


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A folder served as ``python -m http.server`` serves it, on 127.0.0.1."""
    folder = tmp_path / "team"
    folder.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield folder, f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _team_wheel(tmp_path: Path) -> Path:
    """Machine A's build of demo-pkg as `wheelcuda publish` put it on the team's index:
    labelled with its key (torch 2.10.0+cu128, sm_120)."""
    built = tiny_wheel(tmp_path / "built", name="demo_pkg", version="1.0.0")
    return wheelfile.labelled(built, tmp_path / "index", FIELDS)


def _pypi(tmp_path: Path) -> Path:
    """What the project's own index holds: torch (a tiny wheel of each version) and
    demo-pkg's own wheel (its sdist's build, elsewhere)."""
    folder = tmp_path / "pypi"
    for version in (TORCH, "2.9.1+cu128"):
        tiny_wheel(folder, name="torch", version=version)
    tiny_wheel(folder, name="demo_pkg", version="1.0.0")
    return folder


def _uv(*args: str, env: dict[str, str], cwd: Path, uv: Path = UV
        ) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items()
            if not k.startswith(("UV_", "NV_VARIANT_", "VIRTUAL_ENV"))}
    full.update({"UV_CACHE_DIR": str(cwd / "uv-cache"), "UV_PYTHON_DOWNLOADS": "never",
                 **env})
    return subprocess.run([str(uv), *args], capture_output=True, text=True, env=full,
                          cwd=cwd, check=False)


def _installed(venv: Path, name: str) -> str:
    out = subprocess.run([str(venv / "bin" / "python"), "-c",
                          f"import importlib.metadata as m; print(m.version({name!r}))"],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_publish_writes_a_variant_and_its_index_json(tmp_path: Path,
                                                     served: tuple[Path, str]) -> None:
    folder, _url = served
    wheel = _team_wheel(tmp_path)
    r = run("publish", "--variants", str(folder), str(wheel))
    assert r.returncode == 0, r.stderr
    [made] = folder.glob("*.whl")
    assert made.name.startswith(f"demo_pkg-1.0.0+{LABEL}-py3-none-any-")
    assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == []
    index = json.loads((folder / f"demo_pkg-1.0.0+{LABEL}-variants.json").read_text())
    label = made.stem.rsplit("-", 1)[1]
    assert index["variants"] == {label: {"nvidia": {
        "sm_arch": ["120_real"], "cuda_version_lower_bound": ["12.8"]}}}
    assert index["providers"]["nvidia"] == {
        "requires": [variants.PROVIDER_REQUIRES], "plugin-api": variants.PROVIDER_API}
    with zipfile.ZipFile(made) as z:
        meta = z.read(f"demo_pkg-1.0.0+{LABEL}.dist-info/METADATA").decode()
        assert f"Requires-Dist: torch=={TORCH}\n" in meta.split("\n\n")[0] + "\n"
    assert wheelfile.read_key(made)["share_id"] == sharekey.share_id(FIELDS)  # type: ignore[index]

    # a second wheel of another version: each version its own JSON, the first one kept
    other = wheelfile.labelled(tiny_wheel(tmp_path / "b2", name="demo_pkg", version="1.0.1"),
                               tmp_path / "index", FIELDS)
    assert run("publish", "--variants", str(folder), str(other)).returncode == 0
    assert len(list(folder.glob("*-variants.json"))) == 2


def picks(uv: Path, tmp_path: Path, folder: Path, url: str) -> dict[str, str]:
    """The demo-pkg version ``uv pip install`` puts into a fresh venv in each case, the
    team's folder (machine A's sm_120 build for torch 2.10.0+cu128) served at ``url``."""
    assert run("publish", "--variants", str(folder), str(_team_wheel(tmp_path))).returncode == 0
    pypi = _pypi(tmp_path)

    def install(torch: str, env: dict[str, str], *flags: str) -> str:
        venv = tmp_path / "venv"
        made = _uv("venv", "-q", "--clear", "--python", sys.executable, str(venv), env={},
                   cwd=tmp_path, uv=uv)
        assert made.returncode == 0, made.stderr
        base = ["pip", "install", "--python", str(venv / "bin" / "python"), "--no-build"]
        got = _uv(*base, "--no-index", "--find-links", str(pypi), f"torch=={torch}", env={},
                  cwd=tmp_path, uv=uv)
        assert got.returncode == 0, got.stderr
        # as the README's uv.toml has it: the team's folder as find-links, the preview
        # feature, torch held to the project's own
        got = _uv(*base, "--no-index", "--find-links", str(pypi), "--find-links", url,
                  "--constraints", str(_constraint(tmp_path, torch)), *flags, "demo-pkg",
                  env=env, cwd=tmp_path, uv=uv)
        assert got.returncode == 0, got.stderr
        assert _installed(venv, "torch") == torch  # never changed for the team's wheel
        return _installed(venv, "demo-pkg")

    preview = ("--preview-features", "wheel-variants")
    return {
        "sm_120": install(TORCH, SM120, *preview),
        "sm_90": install(TORCH, {**SM120, "NV_VARIANT_PROVIDER_FORCE_SM_ARCH": "9.0"},
                         *preview),
        "another torch": install("2.9.1+cu128", SM120, *preview),
        "no preview": install(TORCH, SM120),
        # the preview asked through the variable uv also reads
        "UV_PREVIEW_FEATURES": install(TORCH, {**SM120,
                                               "UV_PREVIEW_FEATURES": "wheel-variants"}),
    }


#: what uv must install in each case of :func:`picks`: the team's build, or the index's
EXPECTED = {"sm_120": f"1.0.0+{LABEL}", "sm_90": "1.0.0", "another torch": "1.0.0",
            "no preview": "1.0.0", "UV_PREVIEW_FEATURES": f"1.0.0+{LABEL}"}


def test_uv_picks_the_teams_build_only_where_it_runs(tmp_path: Path,
                                                     served: tuple[Path, str]) -> None:
    version = _uv("--version", env={}, cwd=tmp_path).stdout
    assert version.startswith("uv 0.13.9"), version
    assert picks(UV, tmp_path, *served) == EXPECTED


def _constraint(tmp_path: Path, torch: str) -> Path:
    path = tmp_path / "constraints.txt"
    path.write_text(f"torch=={torch}\n")
    return path


def test_without_the_torch_constraint_uv_would_change_torch(tmp_path: Path,
                                                            served: tuple[Path, str]) -> None:
    """Why the README's setup holds torch: uv pip replaces the environment's torch to
    satisfy the team's wheel's pin when the index has that torch (seen with uv 0.13.9)."""
    folder, url = served
    assert run("publish", "--variants", str(folder), str(_team_wheel(tmp_path))).returncode == 0
    pypi, venv = _pypi(tmp_path), tmp_path / "venv"
    assert _uv("venv", "-q", "--python", sys.executable, str(venv), env={},
               cwd=tmp_path).returncode == 0
    base = ["pip", "install", "--python", str(venv / "bin" / "python"), "--no-build",
            "--no-index", "--find-links", str(pypi)]
    assert _uv(*base, "torch==2.9.1+cu128", env={}, cwd=tmp_path).returncode == 0
    got = _uv(*base, "--find-links", url, "--preview-features", "wheel-variants", "demo-pkg",
              env=SM120, cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    assert _installed(venv, "torch") == TORCH


def test_the_wheel_cache_publishes_as_variants(tmp_path: Path) -> None:
    m = Machines(tmp_path)
    code, err = m.install("a", "--arch", "12.0")
    assert code == 0, err
    folder = tmp_path / "team"
    env = {**m.env, "WHEELCUDA_CACHE_DIR": str(tmp_path / "cache-a")}
    r = run("publish", "--all", "--variants", str(folder), env=env)
    assert r.returncode == 0, r.stderr
    assert "nvidia :: sm_arch :: 120_real" in r.stderr and "requires torch===" in r.stderr
    [made] = folder.glob("demo_ext-1.0.0+wc*-py3-none-any-*.whl")
    assert (folder / variants_json(made)).is_file()


def variants_json(wheel: Path) -> str:
    return "-".join(wheel.name.split("-")[:2]) + "-variants.json"


def test_bad_inputs_say_the_fix_and_write_nothing(tmp_path: Path) -> None:
    plain = tiny_wheel(tmp_path / "built", name="demo_pkg", version="1.0.0")
    r = run("publish", "--variants", str(tmp_path / "team"), str(plain))
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "holds no wheelcuda key" in r.stderr and "fix:" in r.stderr
    assert not (tmp_path / "team").exists()

    unpruned = wheelfile.labelled(plain, tmp_path / "index", {**FIELDS, "prune": False})
    r = run("publish", "--variants", str(tmp_path / "team"), str(unpruned))
    assert r.returncode == 1 and "--all-archs" in r.stderr, r.stderr

    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        r = run("publish", "--variants", str(locked), str(_team_wheel(tmp_path)))
    finally:
        locked.chmod(0o755)
    if os.geteuid() != 0:  # root writes anywhere
        assert r.returncode == 1 and "cannot write to" in r.stderr, r.stderr
        assert list(locked.iterdir()) == []
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    r = run("publish", "--variants", str(a_file), str(_team_wheel(tmp_path)))
    assert r.returncode == 1 and "cannot make the folder" in r.stderr, r.stderr
    assert "fix: give --variants a folder you can write" in r.stderr
    r = run("publish", "--variants", str(tmp_path / "team"), str(tmp_path / "nothing.whl"))
    assert r.returncode == 1 and "no wheel at" in r.stderr
    r = run("publish", "--variants", str(tmp_path / "t"), "--publish", "http://x/", "--all")
    assert r.returncode == 2 and "give one" in r.stderr
