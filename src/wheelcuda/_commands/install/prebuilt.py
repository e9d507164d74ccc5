"""A public index's fat prebuilt wheel, taken by choice (``--prebuilt URL``): judged by
its label (torch's and CUDA's major.minor, the ABI, the Python and platform tags), then by
the SASS its own shared objects hold."""

from __future__ import annotations

import tempfile
from pathlib import Path

from packaging.utils import parse_wheel_filename
from packaging.version import Version

from ... import _pipeline as pipeline
from ... import _report as report
from ..._context import Context
from ..._probe import fatbin, source, wheeltags
from ..._probe import index as index_probe
from ..._probe import torch as torch_probe
from ..._store import wheels
from ..._team import probe_credentials as credentials
from ..._team import rules_prebuilt as prebuilt
from ..._team import store as share
from ..._team import store_wheelfile as wheelfile
from ..._team.rules import Sharing
from ...errors import WheelcudaError
from .plan import Prepared
from .share import shareable


def from_prebuilt(ctx: Context, p: Prepared, s: Sharing) -> str | None:
    """A fat prebuilt wheel for each package from the public indexes named (Astral's
    GPU index, for one), kept in the wheel cache: the index it came from, or None. Judged by its
    label (torch's and CUDA's major.minor, the ABI, the Python and platform tags), then
    by the SASS its own shared objects hold: every arch asked for, or it is not taken."""
    r = p.resolved
    if not s.prebuilt or not shareable(p) or r.torch is None or r.torch.cuda is None \
            or not r.archs:
        return None
    wanted = {a.major * 10 + a.minor for a in r.archs}
    sources = p.given.sources or p.specs
    versions = [source.distribution_version(spec) for spec in sources]
    if None in versions or len(versions) != len(p.names):
        unknown = next((spec for spec, v in zip(sources, versions, strict=False) if v is None),
                       ", ".join(sources))
        report.note(f"not looking for a prebuilt wheel: the version {unknown} builds is "
                    "known only once it is built (a prebuilt wheel of another version is "
                    "never taken); pin it (name==version) to look")
        return None
    for url in s.prebuilt:
        # a third party: the team's credentials (WHEELCUDA_INDEX_*) are not sent there
        index = credentials.credentials(url, {"HOME": ctx.get("HOME") or ""})
        with tempfile.TemporaryDirectory(prefix="wheelcuda-prebuilt-") as tmp:
            got = [path for name, version in zip(p.names, versions, strict=True)
                   if name and version
                   if (path := _prebuilt_one(index, name, version, r=r, wanted=wanted,
                                             tmp=Path(tmp)))]
            if len(got) == len(p.names):
                wheels.adopt(r.layout, p.key, p.fields, got, index_probe.shown(url))
                report.note(f"took the prebuilt {', '.join(g.name for g in got)} from "
                            f"{index_probe.shown(url)}: it holds SASS for "
                            f"{', '.join(f'sm_{n}' for n in sorted(wanted))}")
                return url
    return None

def _prebuilt_one(index: credentials.Index, name: str, version: Version, *, r: pipeline.Resolved,
                  wanted: set[int], tmp: Path) -> Path | None:
    shown = index_probe.shown(index.url)
    torch = r.torch
    assert torch is not None and torch.cuda is not None  # from_prebuilt checked
    try:
        listed = index_probe.files(index.url, name)
    except WheelcudaError as exc:
        report.warn(f"warning: the prebuilt index {shown} could not be read: {exc.message}")
        return None
    supported = wheeltags.supported(r.target.version[:2])
    found = [f for f in listed if prebuilt.candidate(
        f.filename, name, version, torch=torch.version, cuda=torch.cuda,
        cxx11_abi=torch_probe.cxx11_abi(torch), supported=supported)]
    if not found:
        report.note(f"{shown} has no prebuilt {name} {version.public} for torch "
                    f"{torch.version} (CUDA {torch.cuda}) and {r.target.tag} on this machine")
    for f in sorted(found, key=lambda f: parse_wheel_filename(f.filename)[1], reverse=True):
        try:
            path = share.download(f, index, tmp)
        except WheelcudaError as exc:
            report.warn(f"warning: {f.filename} from {shown}: {exc.message}")
            continue
        try:
            wheelfile.check_metadata(path)
        except WheelcudaError as exc:
            report.note(f"not taking {f.filename} from {shown}: {exc.message}")
            path.unlink()
            continue
        code = fatbin.of_wheel(path)
        if wanted <= code.sass:
            return path
        held = ", ".join(f"sm_{n}" for n in sorted(code.sass)) or "none"
        report.note(f"not taking {f.filename} from {shown}: it holds SASS for {held}")
        path.unlink()
    return None
