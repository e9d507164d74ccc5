"""``wheelcuda fetch``: the compiler set torch pins, into the
store, with the installer's output shown as it comes; pip runs on the target's interpreter
(wheelcuda's own, in a uv tool venv, has no pip)."""

from __future__ import annotations

from pathlib import Path

from tests import fakes
from tests.test_cli import fail, run
from tests.test_failure_modes import torch_only, uv_calls

REPO = Path(__file__).resolve().parents[1]

TALKATIVE_UV = """import json, sys
sys.path[:0] = [{repo!r}, {src!r}]
args = sys.argv[1:]
with open({log!r}, "a") as f:
    f.write(json.dumps(args) + "\\n")
print("Downloading nvidia-nvvm (58.7MiB)", flush=True)
from pathlib import Path
from tests import fakes
fakes.cu13_site(Path(args[args.index("--target") + 1]))
print("Installed 6 packages in 1.2s", file=sys.stderr, flush=True)
"""


def talkative_uv(tmp: Path) -> dict[str, str]:
    return fakes.uv_on_path(tmp, TALKATIVE_UV.format(repo=str(REPO), src=str(REPO / "src"),
                                                     log=str(tmp / "uv-calls")))


def test_fetch_into_the_store_once(tmp_path: Path, isolated: Path) -> None:
    py = torch_only(tmp_path)
    env = talkative_uv(tmp_path)
    r = run("fetch", "--python", str(py), env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().startswith(str(isolated / "toolkits" / "cuda-toolkit-13.0.3-"))
    assert len(r.stdout.splitlines()) == 1  # $(wheelcuda fetch) is one path
    assert "Downloading nvidia-nvvm (58.7MiB)" in r.stderr  # the installer's own words
    assert "Installed 6 packages" in r.stderr and "fetched the compiler set into" in r.stderr
    assert "Downloading" not in r.stdout  # stdout is data: the folder only
    again = run("fetch", "--python", str(py), env=env)
    assert again.returncode == 0 and "already in wheelcuda's store" in again.stderr
    assert len(uv_calls(tmp_path)) == 1
    assert run("env", "--python", str(py), "--arch", "9.0", env=env).returncode == 0


def test_quiet_fetch_says_nothing_of_its_own(tmp_path: Path, isolated: Path) -> None:
    """The store's fetch speaks through wheelcuda's logger: ``-q`` silences its notes
    (the installer's own output still shows, as it comes)."""
    r = run("fetch", "-q", "--python", str(torch_only(tmp_path)), env=talkative_uv(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().startswith(str(isolated / "toolkits" / "cuda-toolkit-13.0.3-"))
    assert "wheelcuda:" not in r.stderr and "Installed 6 packages" in r.stderr


def test_nothing_to_fetch_when_the_environment_has_it(tmp_path: Path) -> None:
    r = run("fetch", "--python", str(fakes.user_env(tmp_path)), env=talkative_uv(tmp_path))
    assert r.returncode == 0 and "has the compiler wheels itself" in r.stderr
    assert uv_calls(tmp_path) == []


def test_pip_fetch_runs_on_the_targets_interpreter(tmp_path: Path) -> None:
    py = torch_only(tmp_path)
    r = run("fetch", "--python", str(py), env={"WHEELCUDA_INSTALLER": "pip"})
    # the stand-in interpreter exits 0 and unpacks nothing: that is said, with the command
    fail(r, "did not arrive in the store", f"{py} -m pip install")
    assert "pip download" not in r.stderr  # not an offline problem
