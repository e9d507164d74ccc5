"""One wheel to or from a team's index, as ``install`` and the backend both do
it: taken (found by its label, downloaded against the index's sha256, its embedded key
checked), or published (labelled with its key, uploaded). Neither raises: an index that
cannot serve, or a failed upload, is a warning, and the caller builds or goes on."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import _report as report
from .._probe import index as index_probe
from .._probe import machine
from ..errors import WheelcudaError
from . import probe_credentials as credentials
from . import rules_key as sharekey
from . import store as share
from . import store_wheelfile as wheelfile


def take(index: credentials.Index, name: str, wanted: Mapping[str, Any], tag: str, tmp: Path
         ) -> Path | None:
    """``name``'s wheel of the key ``wanted`` from ``index``, downloaded into ``tmp`` and
    checked (its embedded key is this build's, its METADATA names the project and version
    its file name does); each wheel under the label is tried until one passes. None when
    none does or the index cannot serve (said)."""
    shown = index_probe.shown(index.url)
    label = sharekey.local_label(sharekey.share_id(wanted))
    try:
        found = share.find(index, name, None, label, tag)
    except WheelcudaError as exc:
        report.warn(f"warning: the index {shown} could not serve {name}: {exc.message}; "
                    "building it instead")
        return None
    for f in found:
        try:
            path = share.download(f, index, tmp)
        except WheelcudaError as exc:
            report.warn(f"warning: {f.filename} from {shown}: {exc.message}")
            continue
        why = _refusal(path, wanted)
        if why is None:
            return path
        report.warn(f"warning: {path.name} on {shown} is labelled {label} but {why}: not "
                    "installed")
        path.unlink()
    if found:
        report.warn(f"warning: no wheel of {name} under {label} on {shown} could serve; "
                    "building it instead")
    return None


def _refusal(path: Path, wanted: Mapping[str, Any]) -> str | None:
    """Why a downloaded wheel may not serve this key; None when it may."""
    embedded = wheelfile.read_key(path)
    if embedded is not None and (other := sharekey.other_format(embedded)) is not None:
        return (f"its key is of format {other}, and this wheelcuda reads format "
                f"{sharekey.KEY_FORMAT} (the machine that published it runs another "
                "wheelcuda: the same one on both shares wheels)")
    if embedded is None or not sharekey.matches(embedded, wanted):
        return "the key inside it is not this build's"
    try:
        wheelfile.check_metadata(path)
    except WheelcudaError as exc:
        return exc.message
    return None


def publish(index: credentials.Index, wheel: Path, wanted: Mapping[str, Any], tmp: Path,
            profile: Sequence[Mapping[str, Any]] | None = None) -> bool:
    """``wheel`` labelled with the key ``wanted`` (written in ``tmp``, the build's compile
    ``profile`` beside it) and uploaded; whether it is on the index now (uploaded, or
    there already)."""
    shown = index_probe.shown(index.url)
    try:
        out = wheelfile.labelled(wheel, tmp, wanted, profile=profile)
        answer = share.upload(index, out)
    except WheelcudaError as exc:
        report.warn(f"warning: could not publish {wheel.name} to {shown}: {exc.message}"
                    + (f" ({exc.fix})" if exc.fix else ""))
        return False
    said = "published" if answer == "uploaded" else "already on the index:"
    report.note(f"{said} {out.name} to {shown}")
    return True


def recorded_share(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The key that travels of a build the wheel cache recorded (``wheelcuda publish``):
    its fields as recorded, the compiler by its release, the C library it was built
    against (this machine's for a record older than that field)."""
    return sharekey.share_fields({**fields, "libc": fields.get("libc") or machine.libc()})

def publish_wheels(environ: Mapping[str, str], url: str, found: Sequence[Path], *,
                   wanted: Mapping[str, Any],
                   profile: Sequence[Mapping[str, Any]] | None = None) -> int:
    """Label each wheel with its key as it travels (``wanted``; the build's profile
    beside it, as data) and upload it to ``url``; how many failed (each said as a
    warning: a failed upload never fails an install)."""
    index = credentials.credentials(url, environ)
    with tempfile.TemporaryDirectory(prefix="wheelcuda-publish-") as tmp:
        return sum(not publish(index, wheel, wanted, Path(tmp), profile)
                   for wheel in found)

