"""A built wheel made shareable: a copy whose version carries the key's local
label (``1.7.0`` -> ``1.7.0+wc<12 hex>``, ``1.7.0+cu128`` -> ``1.7.0+cu128.wc<12 hex>``)
and whose ``.dist-info`` holds the key (:data:`wheelcuda._team.rules_key.KEY_FILE`), its
RECORD made again; and the key read back from a wheel.

The copy follows the wheel spec: the ``.dist-info`` (and ``.data``) folder renamed for the
new version, METADATA's ``Version`` changed, RECORD listing every file with its sha256
(urlsafe base64, unpadded) and size and itself without either; signatures (RECORD.jws,
RECORD.p7s) are dropped, since they no longer hold. It is written beside its final name
and renamed into place.
"""

from __future__ import annotations

import base64
import csv
import email.parser
import hashlib
import io
import json
import re
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from .._rules import progress
from .._store import fs
from ..errors import CacheError, WheelcudaError
from . import rules_key as sharekey

#: A key file is a few hundred bytes; anything larger is not one.
_KEY_LIMIT = 2**20
_LABEL_SEGMENT = re.compile(rf"^{sharekey.LABEL_PREFIX}[0-9a-f]{{12}}$")
_SIGNATURES = ("RECORD.jws", "RECORD.p7s")
#: A wheel variant's properties, in its ``.dist-info`` (PEP 825).
VARIANT_FILE = "variant.json"


class WheelFileError(WheelcudaError):
    """A wheel that cannot be read or relabelled."""


def _dist_info(names: list[str], project: str) -> str:
    """The wheel's one top-level ``<name>-<version>.dist-info`` folder, for ``project``."""
    tops = {n.split("/", 1)[0] for n in names if "/" in n}
    found = sorted(t for t in tops if t.endswith(".dist-info")
                   and canonicalize_name(t[:-len(".dist-info")].rpartition("-")[0]) == project)
    if len(found) != 1:
        raise WheelFileError(f"expected one {project} .dist-info folder in the wheel, "
                             f"found {len(found)}")
    return found[0]


def _new_version(version: Version, label: str | None) -> Version:
    """``version`` with ``label`` as the last segment of its local label (an earlier
    wheelcuda segment replaced), or with none (None: wheelcuda's segment removed)."""
    kept = [s for s in (version.local or "").split(".") if s and not _LABEL_SEGMENT.match(s)]
    local = [*kept, *([label] if label else [])]
    return Version(f"{version.public}+{'.'.join(local)}" if local else version.public)


def _digest(raw: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _metadata_with(text: bytes, version: str, requires: Sequence[str] = ()) -> bytes:
    """METADATA with its ``Version:`` header changed and ``requires`` added as
    ``Requires-Dist`` headers after the others (the body, after the first blank line, is
    the description: left alone)."""
    lines = text.decode("utf-8").splitlines(keepends=True)
    end = next((i for i, line in enumerate(lines) if not line.strip()), len(lines))
    for i, line in enumerate(lines[:end]):
        if line.lower().startswith("version:"):
            ending = line[len(line.rstrip("\r\n")):] or "\n"
            lines[i] = f"Version: {version}{ending}"
            if lines[end - 1][-1:] not in ("\n", "\r"):  # a header block without its end
                lines[end - 1] += ending
            lines[end:end] = [f"Requires-Dist: {r}{ending}" for r in requires]
            return "".join(lines).encode("utf-8")
    raise WheelFileError("the wheel's METADATA has no Version")


def _record(entries: list[tuple[str, bytes, int]], record: str) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for name, digest, size in entries:
        writer.writerow([name, _digest(digest), str(size)])
    writer.writerow([record, "", ""])
    return out.getvalue().encode("utf-8")


def _renamed(name: str, old_info: str, new_info: str, old_data: str, new_data: str) -> str:
    top, sep, rest = name.partition("/")
    if top == old_info:
        return f"{new_info}{sep}{rest}"
    if top == old_data:
        return f"{new_data}{sep}{rest}"
    return name


def labelled(wheel: Path, dest: Path, fields: Mapping[str, Any], *, label: bool = True,
             profile: Sequence[Mapping[str, Any]] | None = None,
             requires: Sequence[str] = (), variant: tuple[str, bytes] | None = None
             ) -> Path:
    """Write into ``dest`` a copy of ``wheel`` labelled with the share key of the build
    key ``fields``, holding that key in its ``.dist-info``; the copy's path. Without
    ``label``, the copy keeps the key but not the label (a wheelcuda segment removed):
    what a build backend hands over, whose version must be the project's own. The
    build's compile ``profile`` goes beside the key as data, not part of it: a teammate's
    next build of the package knows its files' times and memory. ``requires`` are added
    to METADATA as ``Requires-Dist``; ``variant`` (a label and ``variant.json``'s text)
    makes the copy a wheel variant (PEP 825): the file in its ``.dist-info``, the label
    after its platform tag."""
    try:
        project, version, _build, _tags = parse_wheel_filename(wheel.name)
    except (InvalidWheelFilename, InvalidVersion) as exc:
        raise WheelFileError(f"{wheel.name} is not a wheel's file name ({exc})") from None
    check_metadata(wheel)  # a label must not carry another project's wheel under this name
    share = sharekey.share_id(fields)
    new_version = _new_version(version, sharekey.local_label(share) if label else None)
    parts = wheel.name[:-len(".whl")].split("-")
    filename = "-".join([parts[0], str(new_version), *parts[2:]]) + ".whl"
    parse_wheel_filename(filename)  # the name stays a wheel's
    if variant is not None:  # PEP 825: `{name}-{version}-{tags}-{label}.whl`
        filename = f"{filename[:-len('.whl')]}-{variant[0]}.whl"
    carried: dict[str, Any] = {"format": sharekey.KEY_FORMAT, "share_id": share,
                               "fields": sharekey.share_fields(fields)}
    if profile:
        carried["profile"] = progress.carried(profile)
    key = json.dumps(carried, indent=1, sort_keys=True).encode()
    with fs.replacing(dest, filename) as tmp:
        _write(wheel, tmp, project, str(new_version), {
            sharekey.KEY_FILE: key, **({VARIANT_FILE: variant[1]} if variant else {})},
            requires=requires)
    return dest / filename


def _write(wheel: Path, out: Path, project: str, version: str, added: Mapping[str, bytes],
           *, requires: Sequence[str]) -> None:
    try:
        source = zipfile.ZipFile(wheel)
    except (OSError, zipfile.BadZipFile) as exc:
        raise WheelFileError(f"cannot read the wheel {wheel}: {exc}") from None
    with source:
        infos = source.infolist()
        old_info = _dist_info([i.filename for i in infos], project)
        stem = old_info[:-len(".dist-info")].rpartition("-")[0]
        new_info, new_data = f"{stem}-{version}.dist-info", f"{stem}-{version}.data"
        old_data = old_info[:-len(".dist-info")] + ".data"
        skipped = {f"{old_info}/RECORD", *(f"{old_info}/{s}" for s in added),
                   *(f"{old_info}/{s}" for s in _SIGNATURES)}
        listed: list[tuple[str, bytes, int]] = []
        try:
            with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
                for info in infos:
                    if info.filename in skipped:
                        continue
                    name = _renamed(info.filename, old_info, new_info, old_data, new_data)
                    copy = zipfile.ZipInfo(name, info.date_time)
                    copy.external_attr, copy.compress_type = info.external_attr, \
                        zipfile.ZIP_DEFLATED
                    if info.is_dir():
                        target.writestr(copy, b"")
                        continue
                    if info.filename == f"{old_info}/METADATA":
                        data = _metadata_with(source.read(info), version, requires)
                        target.writestr(copy, data)
                        listed.append((name, hashlib.sha256(data).digest(), len(data)))
                    else:
                        listed.append((name, *_copy(source, info, target, copy)))
                for base, data in added.items():
                    name = f"{new_info}/{base}"
                    target.writestr(_member(name), data)
                    listed.append((name, hashlib.sha256(data).digest(), len(data)))
                record = f"{new_info}/RECORD"
                target.writestr(_member(record), _record(listed, record))
        except (zipfile.BadZipFile, KeyError, EOFError, UnicodeDecodeError,
                NotImplementedError, RuntimeError) as exc:
            raise WheelFileError(f"cannot read the wheel {wheel}: {exc}") from None
        except OSError as exc:
            raise CacheError(f"cannot write {out}: {exc.strerror or exc}",
                             "free some space there") from None


def _copy(source: zipfile.ZipFile, info: zipfile.ZipInfo, target: zipfile.ZipFile,
          copy: zipfile.ZipInfo) -> tuple[bytes, int]:
    """Stream one member across (a CUDA extension's library is hundreds of MB): its
    sha256 and size."""
    h, size = hashlib.sha256(), 0
    with source.open(info) as src, target.open(copy, "w", force_zip64=info.file_size
                                                > 2**31) as dst:
        for block in iter(lambda: src.read(1 << 20), b""):
            h.update(block)
            dst.write(block)
            size += len(block)
    return h.digest(), size


def _member(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0))
    info.external_attr = 0o644 << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def _read_member(wheel: Path, suffix: str, limit: int) -> bytes | None:
    """The one top-level ``*.dist-info/<suffix>`` of ``wheel`` (None: absent, several,
    larger than ``limit``, or the file is no zip)."""
    try:
        with zipfile.ZipFile(wheel) as z:
            found = [i for i in z.infolist() if re.fullmatch(
                rf"[^/]+\.dist-info/{re.escape(suffix)}", i.filename)]
            if len(found) != 1 or found[0].file_size > limit:
                return None
            return z.read(found[0])
    except (OSError, zipfile.BadZipFile, zipfile.LargeZipFile, KeyError, EOFError,
            NotImplementedError, RuntimeError, ValueError):
        return None


def read_member(wheel: Path, name: str, limit: int = _KEY_LIMIT) -> bytes | None:
    """The wheel's one ``*.dist-info/<name>`` (``variant.json``), or None when it has
    none, several, or it cannot be read."""
    return _read_member(wheel, name, limit)


def read_key(wheel: Path) -> dict[str, Any] | None:
    """The key a wheel carries (:data:`~wheelcuda._team.rules_key.KEY_FILE`), or None
    when it has none or it cannot be read."""
    data = _read_member(wheel, sharekey.KEY_FILE, _KEY_LIMIT)
    if data is None:
        return None
    try:
        key = json.loads(data)
    except ValueError:  # UnicodeDecodeError included
        return None
    return key if isinstance(key, dict) else None


def metadata(wheel: Path) -> dict[str, str]:
    """``Name``, ``Version`` and ``Metadata-Version`` of a wheel's METADATA (what an
    upload sends with it); raises :class:`WheelFileError` when it cannot be read."""
    data = _read_member(wheel, "METADATA", 64 * 2**20)
    if data is None:
        raise WheelFileError(f"cannot read the METADATA of {wheel}")
    headers = email.parser.BytesHeaderParser().parsebytes(data)
    out = {k: str(headers.get(k, "")) for k in ("Name", "Version", "Metadata-Version")}
    if not out["Name"] or not out["Version"]:
        raise WheelFileError(f"the METADATA of {wheel} lacks its Name or Version")
    return out


def check_metadata(wheel: Path) -> None:
    """The wheel's METADATA names the project and public version its file name does (PEP 427:
    the installer trusts the file name for the project it records, and relabelling would
    carry a ``Name: other-pkg`` into the file name's project); raises
    :class:`WheelFileError` when it does not."""
    try:
        project, version, _build, _tags = parse_wheel_filename(wheel.name)
    except (InvalidWheelFilename, InvalidVersion) as exc:
        raise WheelFileError(f"{wheel.name} is not a wheel's file name ({exc})") from None
    meta = metadata(wheel)
    try:
        said = Version(meta["Version"])
    except InvalidVersion:
        raise WheelFileError(f"its METADATA's Version {meta['Version']!r} is no version") \
            from None
    # the public version only: prebuilt wheels are often renamed after the build to add
    # their label (flash-attn's release workflow: METADATA 2.8.3, the file
    # 2.8.3+cu12torch2.8cxx11abiTRUE), and uv accepts them (astral-sh/uv#3596)
    if canonicalize_name(meta["Name"]) != project or said.public != version.public:
        raise WheelFileError(f"its METADATA says {meta['Name']} {meta['Version']}, its file "
                             f"name {project} {version}")
