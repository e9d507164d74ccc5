"""Which release each requirement is: pinned to the one the installer would take, from
the indexes it would search, so the wheel cache keys it by its sdist."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping, Sequence

from packaging.requirements import InvalidRequirement, Requirement

from ... import _pipeline as pipeline
from ..._context import Context
from ..._probe import index, pick, pipconf, release, uvforms
from ..._probe.given import PackageArgs
from ..._rules import installer
from ...errors import WheelcudaError

#: Installer arguments that change where a release comes from or which one it is (uv
#: is asked which release it takes without them; its settings in files and variables it
#: reads itself): with any of them after ``--``, requirements are left to the installer,
#: unpinned.
_CHOOSING = re.compile(r"^(-i|-f|--index-url|--extra-index-url|--find-links|--index|"
                       r"--default-index|--no-index|--pre|--prerelease|--index-strategy|"
                       r"--upgrade-package|-P|--exclude-newer|--constraints?|-c|"
                       r"--overrides?|--config-file|--no-config|--only-binary|--no-binary|"
                       r"--prefer-binary|--no-sources)(=.*)?$")


def places(ctx: Context, r: pipeline.Resolved) -> tuple[list[uvforms.Place], bool]:
    """The indexes the installer would search, and whether it takes the first that has a
    project (uv's default ``first-index``) or the best of all (pip; uv's other
    ``UV_INDEX_STRATEGY`` values)."""
    if isinstance(r.installer, installer.Pip):
        return pipconf.indexes(ctx, r.target.prefix), False
    strategy = (ctx.get("UV_INDEX_STRATEGY") or "first-index").strip()
    return uvforms.indexes(ctx), strategy == "first-index"


def identified(ctx: Context, spec: str, searched: Sequence[uvforms.Place] | None = None,
               sdists: Mapping[str, str] | None = None, pages: index.Pages | None = None
               ) -> str:
    """The spec as the key holds it: a folder's or file's content hash (source_id), and
    for ``name==version`` the sdist's sha256 on the index the installer would take it
    from (or the indexes searched, when none says): the same version from elsewhere is
    another key."""
    if os.path.exists(os.path.join(ctx.cwd, spec)):
        return spec
    found = (sdists or {}).get(spec) or uvforms.pinned_source(spec, ctx, searched, pages)
    return f"{spec} @ {found}" if found else spec


def _check_spec(spec: str) -> None:
    """A package that is no folder or file here must be a requirement (PEP 508) or a URL
    (``git+https://...``, which the installers take unnamed)."""
    if "://" in spec:
        return
    looks_like_path = spec.startswith((".", "/", "~")) or os.sep in spec.split("@", 1)[0]
    try:
        Requirement(spec)
    except InvalidRequirement as exc:
        if looks_like_path:
            raise WheelcudaError(f"{spec}: there is no such folder or file",
                                 "name a project folder, an sdist or a wheel that exists, "
                                 "or a requirement such as causal-conv1d==1.7.0") from exc
        raise WheelcudaError(f"{spec}: not a requirement ({str(exc).splitlines()[0]})",
                             "a name, name==version, name>=version, or a folder or sdist "
                             "that exists: wheelcuda install causal-conv1d==1.7.0") from exc
    if looks_like_path and "@" not in spec:
        raise WheelcudaError(f"{spec}: there is no such folder or file",
                             "name a project folder, an sdist or a wheel that exists")


def pinned(ctx: Context, r: pipeline.Resolved, given: PackageArgs,
           extra: Sequence[str] = ()) -> tuple[PackageArgs, list[str], dict[str, str]]:
    """``given`` with each requirement that names no exact version pinned to the release
    the installer would take, so that the wheel cache keys it by its sdist and serves it
    the next time; what was pinned, as notes; and each pin's sdist, as the key holds it
    (``sha256:...``: the file the installer takes, on the index it takes it from). uv
    says which itself (_probe/release.py); pip's is read from its indexes (_probe/pick.py),
    as pip cannot be asked without building. A requirement whose release comes as
    a wheel for this machine, or that the installer cannot answer for, stays as it is;
    one with no release at all stops here (the installer would fail the same way)."""
    choosing = next((f"{a} after --" for a in extra if _CHOOSING.match(a)), None)
    if not choosing and isinstance(r.installer, installer.Pip):
        choosing = pipconf.choosing(ctx, r.target.prefix)  # only pip reads it
    searched = None if isinstance(r.installer, installer.Uv) else places(ctx, r)
    specs, notes, sdists = [], [], {}
    for spec in given.specs:
        if os.path.exists(os.path.join(ctx.cwd, spec)):
            specs.append(spec)
            continue
        _check_spec(spec)
        if not pick.applies(spec):
            specs.append(spec)
            if not choosing and (sdist := _uvs_sdist(ctx, r, spec)):
                sdists[spec] = sdist
            continue
        if choosing:
            specs.append(spec)
            notes.append(f"{spec}: not pinned ({choosing} tells the installer where and "
                         "what to take): the wheel cache neither serves nor keeps it")
            continue
        found, unknown = _pick(ctx, r, spec, searched)
        specs.append(found.spec if found and not found.wheel else spec)
        if unknown:
            notes.append(f"{spec}: not pinned ({unknown}): the wheel cache neither serves "
                         "nor keeps it")
        elif found and not found.wheel:
            if isinstance(found, release.Release) and found.sha256:
                sdists[found.spec] = f"sha256:{found.sha256}"
            notes.append(f"{spec}: {r.installer.name if r.installer else 'the installer'} "
                         f"takes {found.version} ({found.where}): installing {found.spec}")
    return dataclasses.replace(given, specs=tuple(specs)), notes, sdists


def _uvs_sdist(ctx: Context, r: pipeline.Resolved, spec: str) -> str | None:
    """``sha256:...`` of the sdist uv takes for an exact ``name==version``, asked of uv
    (its indexes, in its order, under its settings: the key's sdist is then the one uv
    builds); None for anything else, for a wheel, or when uv cannot say (the indexes are
    then read as uv would: :func:`identified`)."""
    if not isinstance(r.installer, installer.Uv) or not _exact(spec):
        return None
    try:
        found = release.by_uv(r.installer.command, spec, r.target.version, ctx)
    except release.Unanswered:
        return None
    return f"sha256:{found.sha256}" if found.sha256 and not found.wheel else None


def _exact(spec: str) -> bool:
    """``name==version`` (extras allowed), nothing else: no URL, marker or wildcard."""
    try:
        req = Requirement(spec)
    except InvalidRequirement:
        return False
    return not (req.url or req.marker) and len(req.specifier) == 1 and \
        all(s.operator == "==" and "*" not in s.version for s in req.specifier)


def _pick(ctx: Context, r: pipeline.Resolved, spec: str,
          searched: tuple[list[uvforms.Place], bool] | None
          ) -> tuple[release.Release | pick.Pick | None, str | None]:
    """The release the installer would take, or why it is not known: uv is asked, pip's
    is read from ``searched`` (its indexes, and whether the first that has it wins)."""
    if isinstance(r.installer, installer.Uv):
        try:
            return release.by_uv(r.installer.command, spec, r.target.version, ctx), None
        except release.Unanswered as exc:
            return None, f"uv could not say which release it takes: {exc.message}"
    assert searched is not None  # read once by the caller for every name
    found = pick.newest(spec, searched[0], r.target.version, first_index=searched[1])
    return found, None if found else "not every index the installer searches answered"
