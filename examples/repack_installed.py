"""Turn the distributions installed in a site-packages folder back into wheels, and write
a PEP 503 simple index over them and the wheels/sdists of extra folders.

For a machine with no network (the GPU machine of ../shared/GPU.md): uv's build
isolation installs torch into each build environment from an index, and the only torch
there is the one installed in a venv. Each wheel is made from the distribution's own
RECORD and WHEEL files, stored uncompressed (seconds per GB).

    usage: python repack_installed.py SITE_PACKAGES OUT [EXTRA_FOLDER...]
    then:  UV_INDEX_URL=file://OUT/simple (or UV_DEFAULT_INDEX) uv ...
"""

from __future__ import annotations

import csv
import html
import os
import re
import shutil
import sys
import zipfile
from pathlib import Path


def _tag(dist_info: Path) -> str:
    """The wheel's tag, its several ``Tag:`` lines compressed (``py2-none-any`` and
    ``py3-none-any`` are ``py2.py3-none-any``: the first alone would not install on 3)."""
    tags = [line.split(":", 1)[1].strip() for line in
            (dist_info / "WHEEL").read_text().splitlines() if line.startswith("Tag:")]
    if not tags:
        return "py3-none-any"
    parts = [t.split("-") for t in tags]
    return "-".join(".".join(dict.fromkeys(p[i] for p in parts)) for i in range(3))


def repack(site: Path, dist_info: Path, out: Path) -> Path | None:
    record = dist_info / "RECORD"
    if not record.is_file() or not (dist_info / "WHEEL").is_file():
        return None
    name, version = dist_info.name[:-len(".dist-info")].rsplit("-", 1)
    wheel = out / f"{name}-{version}-{_tag(dist_info)}.whl"
    with record.open(newline="") as f, zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as z:
        for row in csv.reader(f):
            if not row:
                continue
            path = os.path.normpath(site / row[0])
            if row[0].startswith("..") or not os.path.isfile(path) or "__pycache__" in row[0]:
                continue  # console scripts outside site-packages, bytecode
            z.write(path, row[0])
    return wheel


def _project(filename: str) -> str:
    base = re.sub(r"(\.tar\.gz|\.zip|\.whl)$", "", filename)
    name = base.split("-")[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def index(files: Path, out: Path) -> None:
    by_project: dict[str, list[str]] = {}
    for f in sorted(os.listdir(files)):
        by_project.setdefault(_project(f), []).append(f)
    for project, names in by_project.items():
        folder = out / "simple" / project
        folder.mkdir(parents=True, exist_ok=True)
        links = "".join(f'<a href="../../files/{html.escape(n)}">{html.escape(n)}</a>\n'
                        for n in names)
        (folder / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")


def main() -> int:
    site, out = Path(sys.argv[1]), Path(sys.argv[2])
    files = out / "files"
    files.mkdir(parents=True, exist_ok=True)
    extra = {n for d in sys.argv[3:] for n in os.listdir(d)}
    for d in sys.argv[3:]:
        for n in os.listdir(d):
            if n.endswith((".whl", ".tar.gz")):
                shutil.copy2(Path(d) / n, files / n)
    made = 0
    for dist_info in sorted(site.glob("*.dist-info")):
        name = dist_info.name[:-len(".dist-info")].rsplit("-", 1)[0]
        if any(_project(e) == re.sub(r"[-_.]+", "-", name).lower() for e in extra):
            continue  # a real wheel of it was carried
        made += repack(site, dist_info, files) is not None
    index(files, out)
    print(f"repacked {made} distributions; index at {out}/simple")
    return 0


if __name__ == "__main__":
    sys.exit(main())
