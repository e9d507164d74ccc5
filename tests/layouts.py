"""The CUDA 12 wheels' real layouts, as the tests' fixtures take them.

The fakes used to be written from the catalog alone, and the real wheels differ: each
installs a plain file ``nvidia/__init__.py`` beside its component folder, and an
``__init__.py`` in the folder, its ``include/`` and its ``lib/``. Code that walked
``nvidia/*`` expecting folders crashed for every CUDA 12 torch and no test saw it.

``tests/data/cu12_wheels.json`` holds what PyPI's wheels list (their zip directory,
read with HTTP range requests: a few KB of each wheel, not the GBs), less the deep
header trees (``include/<sub>/...``): every file outside ``include/``, every file at
the top of ``include/``, and every ``__init__.py``. It is recorded by::

    .venv/bin/python -m tests.layouts --write

and ``make live`` (tests/live/test_layouts.py) reads the same wheels from PyPI again and
fails when their layout moved from the recorded one.

:func:`install` writes a distribution into a folder as pip would (its files, a RECORD
naming each, INSTALLER), so a fixture site or a fake fetch is laid out as the real one.
"""

from __future__ import annotations

import io
import json
import sys
import urllib.request
import zipfile
from collections.abc import Iterable
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "cu12_wheels.json"
SIMPLE = "https://pypi.org/simple"
PLATFORM = "manylinux"
MACHINE = "x86_64"

#: The CUDA 12 wheels the tests fake: the clang toolkit's set, the headers of torch's
#: libraries and what those pull in, at the versions torch 2.9.1 and 2.10.0 (cu128) pin.
WHEELS = ("nvidia-cuda-nvcc-cu12==12.8.93", "nvidia-cuda-runtime-cu12==12.8.90",
          "nvidia-cuda-cccl-cu12==12.8.90", "nvidia-nvfatbin-cu12==12.8.90",
          "nvidia-curand-cu12==10.3.9.90", "nvidia-nvjitlink-cu12==12.8.93",
          "nvidia-cublas-cu12==12.8.4.1", "nvidia-cusparse-cu12==12.5.8.93",
          "nvidia-cusolver-cu12==11.7.3.90", "nvidia-cufft-cu12==11.3.3.83",
          "nvidia-cuda-nvrtc-cu12==12.8.93", "nvidia-nvtx-cu12==12.8.90",
          "nvidia-cuda-cupti-cu12==12.8.90")


def kept(name: str) -> bool:
    """Whether a wheel member is part of the recorded layout (pure)."""
    parts = name.split("/")
    if name.endswith("__init__.py") or "include" not in parts:
        return True
    return len(parts) - parts.index("include") == 2  # a file at the top of include/


class _Ranged(io.RawIOBase):
    """A remote file read with HTTP range requests (zipfile reads the end first)."""

    def __init__(self, url: str) -> None:
        head = urllib.request.Request(url, method="HEAD")
        with urllib.request.urlopen(head, timeout=60) as r:
            self.size = int(r.headers["Content-Length"])
        self.url, self.pos = url, 0

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = {0: offset, 1: self.pos + offset, 2: self.size + offset}[whence]
        return self.pos

    def tell(self) -> int:
        return self.pos

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        n = min(len(buffer), self.size - self.pos)
        if n <= 0:
            return 0
        rng = {"Range": f"bytes={self.pos}-{self.pos + n - 1}"}
        with urllib.request.urlopen(urllib.request.Request(self.url, headers=rng),
                                    timeout=60) as r:
            data = r.read()
        buffer[:len(data)] = data
        self.pos += len(data)
        return len(data)


def wheel_url(pin: str, simple: str = SIMPLE) -> tuple[str, str]:
    """(file name, URL) of the Linux x86_64 wheel of ``name==version`` on the index."""
    name, version = pin.split("==")
    request = urllib.request.Request(f"{simple}/{name}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as r:
        files = json.load(r)["files"]
    stem = f"{name.replace('-', '_')}-{version}-"
    for f in files:
        if f["filename"].startswith(stem) and PLATFORM in f["filename"] \
                and MACHINE in f["filename"] and f["filename"].endswith(".whl"):
            return f["filename"], f["url"]
    raise LookupError(f"no {PLATFORM} {MACHINE} wheel of {pin} on {simple}")


def read_remote(pin: str) -> dict[str, object]:
    """The recorded form of ``pin``'s wheel on PyPI today."""
    filename, url = wheel_url(pin)
    with zipfile.ZipFile(io.BufferedReader(_Ranged(url), 1 << 20)) as z:
        names = z.namelist()
    return {"pin": pin, "wheel": filename, "members": len(names),
            "files": sorted(n for n in names if kept(n))}


def recorded() -> dict[str, dict[str, object]]:
    """The recorded layouts, by distribution name."""
    rows = json.loads(DATA.read_text())["wheels"]
    return {str(r["pin"]).split("==")[0]: r for r in rows}


def install(site: Path, name: str, *, skip: Iterable[str] = (),
            extra: dict[str, str] | None = None, duplicate_record: bool = False) -> Path:
    """Install the recorded layout of ``name`` into ``site`` as pip does: every file
    (empty unless ``extra`` gives its text; ``skip`` left out), INSTALLER, and a RECORD
    naming each. ``duplicate_record``: RECORD names INSTALLER twice, as a wheel repacked
    from an installed distribution does (seen on 2026-12-01)."""
    row = recorded()[name]
    version = str(row["pin"]).split("==")[1]
    info_name = f"{name.replace('-', '_')}-{version}.dist-info"
    extra = {f"{info_name}/METADATA": f"Metadata-Version: 2.1\nName: {name}\n"
                                      f"Version: {version}\n", **(extra or {})}
    files = [f for f in row["files"] if f not in set(skip)]  # type: ignore[attr-defined]
    info = next(f.split("/")[0] for f in files if ".dist-info/" in f)
    written = [*files, *(f for f in extra if f not in files), f"{info}/INSTALLER"]
    for rel in written:
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith("/RECORD"):
            continue
        path.write_text(extra.get(rel, "pip\n" if rel.endswith("/INSTALLER") else ""))
        if "/bin/" in rel:
            path.chmod(0o755)
    rows = [f"{rel},," for rel in written]
    if duplicate_record:
        rows.append(f"{info}/INSTALLER,,")
    (site / info / "RECORD").write_text("\n".join(rows) + "\n")
    return site / info


def wheel(folder: Path, name: str, extra: dict[str, str] | None = None) -> Path:
    """A real wheel file of ``name`` in its recorded layout (uv and pip install it), its
    files empty unless ``extra`` gives their text."""
    from tests import fakes  # noqa: PLC0415

    row = recorded()[name]
    version = str(row["pin"]).split("==")[1]
    own = ("/METADATA", "/WHEEL", "/RECORD")  # fakes.wheel writes these itself
    files = {f: (extra or {}).get(f, "") for f in row["files"]  # type: ignore[attr-defined]
             if not f.endswith(own)}
    return fakes.wheel(folder, name, version, {**files, **(extra or {})})


def main(argv: list[str]) -> int:
    rows = [read_remote(pin) for pin in WHEELS]
    text = json.dumps({"source": SIMPLE, "kept": "files outside include/, at the top of "
                       "include/, and every __init__.py", "wheels": rows}, indent=1) + "\n"
    if "--write" in argv:
        DATA.parent.mkdir(exist_ok=True)
        DATA.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
