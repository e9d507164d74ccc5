"""The roots made of NVIDIA's archives in the store: how one is laid out, named, marked
complete, and found again.

Unpacked (:mod:`.extract`), the archives are laid out like site-packages::

    <cache>/toolkits/cuda-redist-12.8.1-x86_64/
        nvidia/cuda_nvcc/{bin,include,nvvm,...}        (CUDA 13: nvidia/cu13/...)
        nvidia/cuda_runtime/{include,lib}
        nvidia/cuda_cccl/{include,lib/cmake}
        nvidia_cuda_nvcc_cu12-12.8.93.dist-info/METADATA   (Name, Version; licenses/)
        ...
        wheelcuda-store.json                              (the release and its archives)

so that :mod:`wheelcuda._probe.locate` finds every component, with its version, as it
finds wheels. The mark (``wheelcuda-store.json``) is written only after
:mod:`~wheelcuda._probe.locate` found the whole compiler set in the root; a root without
one is not complete. :mod:`.archives` fetches into these folders, under their locks.
"""

from __future__ import annotations

import contextlib
import json
import platform
import re
from collections.abc import Sequence
from pathlib import Path

from ..._data import catalog
from ..._probe import locate
from ..._rules.checks import version_key
from ..._store import extract, fs, toolkits
from ..._store.layout import Layout
from ...errors import ComponentError
from . import data, rules

#: Store folders of this source: ``cuda-redist-<label>-<machine>`` for a release whose
#: manifest wheelcuda pins (only that manifest's content is ever accepted there), and
#: ``cuda-redist-<label>-sha<digest>-<machine>`` for a manifest the user named: named by
#: its digest, it never takes a pinned release's place, whatever label it carries.
PREFIX = "cuda-redist-"


def folder_name(label: str, machine: str | None = None, *,
                digest: str | None = None) -> str:
    """``cuda-redist-12.8.1-x86_64`` for a pinned release; with the ``digest`` of a
    manifest the user named, ``cuda-redist-<label>-sha<digest[:16]>-x86_64`` (pure). A
    label from such a manifest may hold anything: only ``[A-Za-z0-9.+-]`` is kept, and
    the digest part means it never names a pinned release's folder."""
    safe = re.sub(r"[^A-Za-z0-9.+-]", "_", label)
    tag = f"-sha{digest[:16]}" if digest else ""
    return f"{PREFIX}{safe}{tag}-{machine or platform.machine()}"


def plan_folder(plan: rules.Plan, machine: str) -> str:
    return folder_name(plan.label, machine, digest=None if plan.pinned else plan.manifest_sha256)


# -- building a root ----------------------------------------------------------------------

def _missing(root: Path, major: int) -> list[str]:
    """What of the compiler set :mod:`~wheelcuda._probe.locate` does not find whole,
    with its version, in ``root``."""
    found = locate.locate([str(root)], catalog.COMPILER)
    out = []
    for c in catalog.COMPILER:
        hit = found.get(c.name, major)
        if hit is None or hit.version is None:
            out.append(c.wheels[major])
        elif hit.missing:
            out.append(f"{c.wheels[major]} ({', '.join(hit.missing)})")
    return out


def assemble(root: Path, plan: rules.Plan, files: Sequence[Path]) -> None:
    """Unpack each of ``plan``'s archives (``files``, in its order) into ``root``, with a
    ``.dist-info`` for each, and mark it complete once the whole compiler set is there."""
    box = extract.Unpack(root)
    for archive, file in zip(plan.archives, files, strict=True):
        extract.unpack(file, archive, box)
        meta = root / rules.dist_info(archive.dist, archive.version)
        meta.mkdir(mode=0o755, exist_ok=True)
        fs.write_text(meta / "METADATA",
                      rules.metadata_text(archive.dist, archive.version,
                                          f"from NVIDIA's redistributable archive "
                                          f"{archive.filename}, unpacked by wheelcuda"),
                      0o644)
        fs.write_text(meta / "INSTALLER", "wheelcuda\n", 0o644)
    extract.links_stay_inside(box)
    major = plan.archives[0].major
    missing = _missing(root, major)
    if missing:
        raise ComponentError(
            f"NVIDIA's CUDA {plan.label} archives ({', '.join(a.filename for a in plan.archives)})"
            f" did not hold {', '.join(missing)}",
            "this release lays its archives out in a way wheelcuda does not know: name "
            "another with --redist-manifest, or report it")
    mark = {"source": "redist", "release": plan.label, "platform": plan.platform,
            "cuda": ".".join(plan.archives[0].version.split(".")[:2]),
            "manifest": {"url": plan.manifest_url, "sha256": plan.manifest_sha256,
                         "pinned": plan.pinned},
            "archives": [{"name": a.name, "version": a.version, "url": a.url,
                          "size": a.size, "sha256": a.sha256} for a in plan.archives]}
    fs.write_text(root / toolkits.MARK, json.dumps(mark, indent=1, sort_keys=True) + "\n")


# -- finding one --------------------------------------------------------------------------

def _mark(folder: Path) -> dict[str, object] | None:
    try:
        mark = json.loads((folder / toolkits.MARK).read_text())
    except (OSError, ValueError):
        return None
    return mark if isinstance(mark, dict) and mark.get("source") == "redist" else None


def complete(folder: Path, manifest_sha256: str | None) -> bool:
    """Whether ``folder`` is a whole root, fetched from the manifest of that sha256 (any,
    when None)."""
    mark = _mark(folder)
    if mark is None:
        return False
    manifest = mark.get("manifest")
    return manifest_sha256 is None or (isinstance(manifest, dict)
                                       and manifest.get("sha256") == manifest_sha256)


def existing(layout: Layout, cuda: str, machine: str | None = None, *,
             manifest: str | None = None) -> Path | None:
    """The newest complete root fetched for CUDA ``X.Y`` on this machine from a manifest
    wheelcuda pins, or None. A root fetched from a manifest the user named is taken only
    by a run that names the same ``manifest`` (its ``--redist-manifest`` or
    ``WHEELCUDA_REDIST_MANIFEST``), never for NVIDIA's release."""
    machine = machine or platform.machine()
    if manifest:
        return _existing_given(layout, cuda, machine, manifest)
    for release in sorted((r for r in data.RELEASES if r.cuda == cuda and r.manifest_sha256),
                          key=lambda r: version_key(r.label), reverse=True):
        path = layout.toolkits / folder_name(release.label, machine)
        mark = _mark(path)
        pin = mark.get("manifest") if mark else None
        if (isinstance(pin, dict) and pin.get("pinned") is True
                and pin.get("sha256") == release.manifest_sha256
                and mark is not None and mark.get("cuda") == cuda):
            return path
    return None


def _existing_given(layout: Layout, cuda: str, machine: str, manifest: str) -> Path | None:
    """The newest root fetched from the manifest named ``manifest`` (by the address it
    was read from, as its mark records), not from a pinned one."""
    best: tuple[float, Path] | None = None
    try:
        entries = list(layout.toolkits.iterdir())
    except OSError:
        return None
    for path in entries:
        if not (path.name.startswith(PREFIX) and path.name.endswith(f"-{machine}")):
            continue
        mark = _mark(path)
        given = mark.get("manifest") if mark else None
        if (mark is None or mark.get("cuda") != cuda or not isinstance(given, dict)
                or given.get("pinned") is not False or given.get("url") != manifest):
            continue
        with contextlib.suppress(OSError):
            when = (path / toolkits.MARK).stat().st_mtime
            if best is None or when > best[0]:
                best = (when, path)
    return best[1] if best else None
