"""Small fake environments written from the catalog itself, for the locating logic.

They prove where wheelcuda looks and what it concludes; they prove nothing about nvcc
(the integration tests use the real wheels for that). The fake nvcc only answers
``--version`` and ``--list-gpu-code`` so that a tree can be materialized.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
from collections.abc import Iterable
from pathlib import Path

from wheelcuda._data import catalog
from wheelcuda._data.catalog import Component

FAKE_NVCC = """#!/bin/sh
case "$1" in
  --version) printf 'nvcc: NVIDIA (R) Cuda compiler driver\\nCuda compilation tools, \
release {release}, V{version}\\nBuild fake\\n' ;;
  --list-gpu-code) printf 'sm_75\\nsm_80\\nsm_90\\nsm_100\\nsm_120\\n' ;;
  *) exit 3 ;;
esac
"""

HOST_CONFIG = """#if defined(__GNUC__)
#if __GNUC__ > 15
#error -- unsupported GNU version! gcc versions later than 15 are not supported!
#endif /* __GNUC__ > 15 */
#endif
"""

CUDA_H = """#ifndef CUDAAPI
#define CUDAAPI
#endif
typedef int CUresult;
CUresult CUDAAPI cuInit(unsigned int Flags);
CUresult CUDAAPI cuDriverGetVersion(int *v);
"""


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def dist_info(site: Path, name: str, version: str, requires: Iterable[str] = ()) -> None:
    """A minimal installed distribution: what importlib.metadata reads."""
    folder = site / f"{name.replace('-', '_')}-{version}.dist-info"
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (folder / "METADATA").write_text("\n".join(lines) + "\n")


def component(site: Path, comp: Component, major: int, version: str,
              skip: Iterable[str] = ()) -> None:
    """Install ``comp``'s catalog files (less ``skip``) and its dist-info into ``site``."""
    folder = site / comp.folders[major]
    for rel in comp.files[major]:
        if rel in skip:
            continue
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if rel == "bin/nvcc":
            release = ".".join(version.split(".")[:2])
            _executable(path, FAKE_NVCC.format(release=release, version=version))
        elif rel.endswith("host_config.h"):
            path.write_text(HOST_CONFIG)
        elif rel.endswith("/cuda.h"):
            path.write_text(CUDA_H)
        else:
            path.write_text("")
    dist_info(site, comp.wheels[major], version)


def cu13_site(site: Path, version: str = "13.0.88", **versions: str) -> Path:
    """A site-packages with a complete CUDA 13 compiler set (versions per component)."""
    for comp in catalog.COMPILER:
        component(site, comp, 13, versions.get(comp.name, version))
    return site


def _text(rel: str) -> str:
    """What a fake file holds: the few files wheelcuda reads have real-looking text."""
    if rel.endswith("host_config.h"):
        return HOST_CONFIG
    if rel.endswith("/cuda.h"):
        return CUDA_H
    return ""


def cu12_wheel(site: Path, wheel: str, *, skip: Iterable[str] = (),
               duplicate_record: bool = False) -> Path:
    """Install the CUDA 12 wheel ``wheel`` into ``site`` in its real layout
    (tests/layouts.py: ``nvidia/__init__.py`` and all), with the catalog's files of its
    components that the real wheel holds, and the deep headers the recording leaves out."""
    from tests import layouts  # noqa: PLC0415

    real = set(layouts.recorded()[wheel]["files"])  # type: ignore[arg-type]
    extra = {}
    for comp in catalog.COMPONENTS:
        if comp.wheels.get(12) != wheel:
            continue
        for rel in comp.files[12]:
            path = f"{comp.folders[12]}/{rel}"
            if path in real or not layouts.kept(path):  # held, or a header not recorded
                extra[path] = _text(path)
    return layouts.install(site, wheel, skip=skip, extra=extra,
                           duplicate_record=duplicate_record)


def cu12_site(site: Path) -> Path:
    """What the CUDA 12 wheels really hold (their recorded layout): the nvcc wheel has
    ptxas but no nvcc or cicc, and each wheel installs ``nvidia/__init__.py``."""
    for wheel in ("nvidia-cuda-nvcc-cu12", "nvidia-cuda-runtime-cu12", "nvidia-cuda-cccl-cu12"):
        cu12_wheel(site, wheel)
    return site


def torch(site: Path, version: str = "2.14.1+cu130", cuda: str | None = "13.0",
          pin: str | None = "==13.0.3") -> Path:
    """torch/version.py and dist-info, as torch's wheels lay them out."""
    pkg = site / "torch"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "version.py").write_text(
        f"from typing import Optional\n__version__ = {version!r}\ncuda: Optional[str] = {cuda!r}\n")
    requires = [f'cuda-toolkit[cudart]{pin}; platform_system == "Linux"'] if pin else []
    dist_info(site, "torch", version.split("+", maxsplit=1)[0], requires)
    return site


def python(tmp: Path, site_dirs: Iterable[Path], name: str = "python") -> Path:
    """A stand-in interpreter: answers wheelcuda's probe with these site folders.

    The probe is wheelcuda's boundary with the target environment, so a script that
    answers it is enough to drive everything behind it from fake trees.
    """
    info = {"executable": str(tmp / name), "prefix": str(tmp), "base_prefix": str(tmp),
            "version": [3, 11, 7], "site_dirs": [str(s) for s in site_dirs],
            "purelib": str(next(iter(site_dirs), tmp))}
    script = tmp / name
    _executable(script, f"#!/bin/sh\nprintf '%s\\n' {shlex.quote(json.dumps(info))}\n")
    return script


def pythonpath_env() -> dict[str, str]:
    """Environment for running ``python -m wheelcuda`` from the source tree."""
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA", "TORCH_CUDA"))}
    env["PYTHONPATH"] = src
    env["WHEELCUDA_NO_GPU_PROBE"] = "1"
    env.pop("VIRTUAL_ENV", None)
    return env


PY = sys.executable


def build_needs(site: Path) -> Path:
    """What --no-build-isolation builds need from the environment."""
    for name, version in (("setuptools", "80.0.0"), ("wheel", "0.45.0"), ("ninja", "1.13.0"),
                          ("packaging", "25.0")):
        dist_info(site, name, version)
    return site


def user_env(tmp: Path) -> Path:
    """A complete user environment: torch cu130, the compiler set, the build needs."""
    site = build_needs(torch(cu13_site(tmp / "site")))
    return python(tmp, [site])


def uv_on_path(tmp: Path, source: str) -> dict[str, str]:
    """Variables that put a fake ``uv`` first on PATH: ``source`` is its Python, run by
    the test's interpreter through a sh trampoline (a #! line cannot hold a long path or
    spaces)."""
    bin_dir = tmp / "fakebin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "uv.py"
    script.write_text(source)
    _executable(bin_dir / "uv", f"#!/bin/sh\nexec {shlex.quote(sys.executable)} "
                                f"{shlex.quote(str(script))} \"$@\"\n")
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "WHEELCUDA_INSTALLER": "uv"}


def sdist(folder: Path, name: str, version: str, *, metadata_version: str = "2.1",
          requires: Iterable[str] = (), dynamic: Iterable[str] = (),
          pyproject: str | None = None) -> Path:
    """An sdist with the PKG-INFO (and pyproject.toml) uv reads for static metadata."""
    folder.mkdir(parents=True, exist_ok=True)
    base = f"{name.replace('-', '_')}-{version}"
    lines = [f"Metadata-Version: {metadata_version}", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    lines += [f"Dynamic: {d}" for d in dynamic]
    members = {"PKG-INFO": "\n".join(lines) + "\n", "setup.py": "from setuptools import setup\n"}
    if pyproject is not None:
        members["pyproject.toml"] = pyproject
    return tarball(folder / f"{base}.tar.gz", members)


def tarball(path: Path, members: dict[str, str]) -> Path:
    """An sdist-shaped .tar.gz: each member under the folder the file is named for."""
    import io  # noqa: PLC0415
    import tarfile  # noqa: PLC0415

    base = path.name.removesuffix(".tar.gz")
    with tarfile.open(path, "w:gz") as tar:
        for member, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{base}/{member}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def wheel(folder: Path, name: str, version: str, files: dict[str, str],
          requires: Iterable[str] = ()) -> Path:
    """A real wheel file (installable by uv and pip) holding ``files``."""
    import base64  # noqa: PLC0415
    import hashlib  # noqa: PLC0415
    import zipfile  # noqa: PLC0415

    folder.mkdir(parents=True, exist_ok=True)
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    meta = "\n".join(["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}",
                      *(f"Requires-Dist: {r}" for r in requires)]) + "\n"
    members = {**files, f"{info}/METADATA": meta,
               f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: fakes\nRoot-Is-Purelib: false\n"
                                "Tag: py3-none-manylinux_2_17_x86_64\n"}
    rows = []
    path = folder / f"{dist}-{version}-py3-none-manylinux_2_17_x86_64.whl"
    with zipfile.ZipFile(path, "w") as z:
        for member, text in members.items():
            data = text.encode()
            z.writestr(member, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            rows.append(f"{member},sha256={digest.decode()},{len(data)}")
        z.writestr(f"{info}/RECORD", "\n".join([*rows, f"{info}/RECORD,,"]) + "\n")
    return path
