"""A team's package index, through which one machine's built wheels reach the others: a
labelled wheel found on it, downloaded (checked against the index's sha256), and uploaded
through the legacy upload API that pypiserver, devpi, Artifactory, Nexus and ``uv
publish`` speak.

Credentials are taken as uv takes them (:func:`credentials`): in the URL, from
WHEELCUDA_INDEX_USERNAME/WHEELCUDA_INDEX_PASSWORD, from netrc, from keyring when it is
installed. A password is never written to disk or shown: :class:`Index` hides it, and
messages show URLs without credentials. Credentials go only to the index's own host
(:mod:`wheelcuda._probe.web`).
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import os
import urllib.error
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from .._probe import index as index_probe
from .._probe import web
from .._probe.index import IndexFile, shown
from .._store import fs, transfer
from ..errors import WheelcudaError
from . import store_wheelfile as wheelfile
from .probe_credentials import Index
from .rules import PASSWORD_VAR, USERNAME_VAR

_AUTH_FIX = (f"check {USERNAME_VAR}/{PASSWORD_VAR} or the URL's user "
             "(https://user:token@host/...), ~/.netrc, or keyring")
_CHUNK = 1 << 20


class ShareError(WheelcudaError):
    """A team's index refused, could not be reached, or served a file that fails its
    checks."""


# -- finding ------------------------------------------------------------------------------

def _with_credentials(url: str, index: Index) -> str:
    """``url`` with the index's credentials in it (:mod:`wheelcuda._probe.web` sends them
    as a header, :mod:`wheelcuda._probe.index` keeps them out of every message)."""
    split = urllib.parse.urlsplit(url)
    if (index.username is None and index.password is None) \
            or split.scheme.lower() not in ("http", "https"):
        return url
    user = urllib.parse.quote(index.username or "", safe="")
    secret = urllib.parse.quote(index.password or "", safe="")
    return urllib.parse.urlunsplit(split._replace(netloc=f"{user}:{secret}@{split.netloc}"))


def answers(index: Index) -> str | None:
    """Why ``index`` does not answer a read (doctor), or None when it does."""
    if not index.url.startswith(("http://", "https://")):
        return None if os.path.isdir(urllib.parse.urlsplit(index.url).path) else "no such folder"
    try:
        with index_probe.open_http(_with_credentials(index.url, index)):
            return None
    except index_probe.IndexUnreadable as exc:
        return exc.message


def _who(index: Index) -> str:
    """Whether credentials were sent, never which (a token may be the user name)."""
    return "with the credentials given" if index.username or index.password \
        else "without credentials"


def _refused(exc: index_probe.IndexUnreadable, index: Index) -> ShareError:
    if exc.status in (401, 403):
        who = _who(index)
        return ShareError(f"{exc.message} ({who})", _AUTH_FIX)
    return ShareError(exc.message, exc.fix or "check that the index is up and its URL")


def _wanted(filename: str, project: str, version: Version | None, label: str,
            tag: str) -> bool:
    try:
        name, got, _build, tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion):
        return False
    if name != project or got.local is None:
        return False
    if version is None:  # any version: the label holds the source's digest
        if got.local != label and not got.local.endswith(f".{label}"):
            return False
    else:
        if got.public != version.public:
            return False
        local = label if version.local is None else f"{version.local}.{label}"
        if got.local != local and not (version.local is None
                                       and got.local.endswith(f".{label}")):
            return False
    return any(t.interpreter in (tag, "py3") for t in tags)


def find(index: Index, name: str, version: str | None, label: str, tag: str
         ) -> list[IndexFile]:
    """The wheels of ``name`` at ``version`` (None: any) whose local label is ``label``
    (or ends with ``.label``) and whose Python tag is ``tag`` or ``py3``, on ``index``,
    best first: the caller tries each, since one wrong wheel under the right label must
    not hide a right one. Empty when the index has none (or not the project). Raises
    :class:`ShareError` when the index cannot be read."""
    project = canonicalize_name(name)
    try:
        wanted_version = Version(version) if version is not None else None
    except InvalidVersion:
        return []
    try:
        found = index_probe.files(_with_credentials(index.url, index), project)
    except index_probe.IndexUnreadable as exc:
        if exc.status == 404:
            return []
        raise _refused(exc, index) from None
    hits = [f for f in found if _wanted(f.filename, project, wanted_version, label.lower(),
                                        tag)]
    # the exact tag before py3, then the highest build tag, then the name
    hits.sort(key=lambda f: (f"-{tag}-" in f.filename, parse_wheel_filename(f.filename)[2],
                             f.filename), reverse=True)
    return hits


# -- downloading --------------------------------------------------------------------------

@contextlib.contextmanager
def _source(f: IndexFile, index: Index) -> Iterator[tuple[IO[bytes], int | None]]:
    """The file's stream and the size its server announced."""
    kind, target = transfer.where(f.url)
    if kind == "file":
        try:
            with open(target, "rb") as stream:
                yield stream, os.fstat(stream.fileno()).st_size
        except OSError as exc:
            raise ShareError(f"cannot read {target}: {exc.strerror or exc}") from None
        return
    url = _with_credentials(f.url, index) if web.same_origin(f.url, index.url) else f.url
    try:
        response = index_probe.open_http(url)
    except index_probe.IndexUnreadable as exc:
        raise _refused(exc, index) from None
    with response:
        length = response.headers.get("Content-Length")
        yield response, int(length) if length and length.isdigit() else None


def download(f: IndexFile, index: Index, dest: Path) -> Path:
    """Download ``f`` into ``dest`` (a temporary name, renamed when it matches the
    index's sha256); a file the index gives no sha256 for is refused, one that differs
    or stops short is deleted."""
    name = os.path.basename(f.filename)
    try:
        parse_wheel_filename(name)
    except (InvalidWheelFilename, InvalidVersion):
        name = ""
    if name != f.filename or name.startswith("."):
        raise ShareError(f"{shown(f.url)}: {f.filename!r} is not a wheel's name") from None
    if not f.sha256:
        raise ShareError(f"{index.url} gives no sha256 for {f.filename}: wheelcuda takes no "
                         "wheel it cannot check",
                         "serve sha256 hashes (PEP 503 #sha256=, PEP 691 hashes)")
    with fs.replacing(dest, name) as tmp:
        digest, size, announced = _fill(f, index, tmp)
        if announced is not None and size != announced:
            raise ShareError(f"the download of {shown(f.url)} stopped at {size} of "
                             f"{announced} bytes", "run again; check the index's server")
        if digest != f.sha256.lower():
            raise ShareError(f"{f.filename} from {index.url} does not match the index's "
                             f"sha256: expected {f.sha256}, got {digest} (not kept)",
                             "tell whoever runs the index: the file or its listing changed")
    return dest / name


def _fill(f: IndexFile, index: Index, tmp: Path) -> tuple[str, int, int | None]:
    """(sha256, bytes written, bytes announced) of the download into ``tmp``."""
    h, size = hashlib.sha256(), 0
    with _source(f, index) as (stream, announced), transfer.writing(tmp, "wb") as write:
        while True:
            try:
                block = stream.read(_CHUNK)
            except (OSError, http.client.HTTPException) as exc:
                raise ShareError(f"the download of {shown(f.url)} stopped at {size} bytes "
                                 f"({type(exc).__name__}: {exc})",
                                 "run again; check the index's server") from None
            if not block:
                break
            h.update(block)
            write(block)
            size += len(block)
    return h.hexdigest(), size, announced


# -- uploading ----------------------------------------------------------------------------

def upload_url(url: str) -> str:
    """Where uploads go: the URL given, less a last ``/simple`` (``/+simple`` for
    devpi): pypiserver takes them at its root, devpi at the index, Nexus and Artifactory
    at the repository."""
    split = urllib.parse.urlsplit(url)
    path = split.path.rstrip("/")
    for tail in ("/simple", "/+simple"):
        if path.endswith(tail):
            return urllib.parse.urlunsplit(split._replace(path=path[:-len(tail)] + "/"))
    return url


def _form(wheel: Path, boundary: str) -> tuple[list[bytes], int]:
    """The multipart body's head (the fields, the file part's header) and tail, and the
    whole body's length (the wheel goes between them, streamed)."""
    meta = wheelfile.metadata(wheel)
    try:
        parse_wheel_filename(wheel.name)
    except (InvalidWheelFilename, InvalidVersion):
        raise ShareError(f"cannot upload {wheel}: not a wheel's file name") from None
    fields = {":action": "file_upload", "protocol_version": "1", "name": meta["Name"],
              "version": meta["Version"], "filetype": "bdist_wheel",
              "pyversion": wheel.name[:-len(".whl")].split("-")[-3],
              "metadata_version": meta["Metadata-Version"] or "2.1",
              "sha256_digest": transfer.file_sha256(wheel)}
    head = b"".join(f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n'
                    f"{v}\r\n".encode() for k, v in fields.items())
    head += (f'--{boundary}\r\nContent-Disposition: form-data; name="content"; '
             f'filename="{wheel.name}"\r\nContent-Type: application/octet-stream\r\n\r\n'
             ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    return [head, tail], len(head) + wheel.stat().st_size + len(tail)


def _body(wheel: Path, head: bytes, tail: bytes) -> Iterator[bytes]:
    yield head
    with open(wheel, "rb") as f:
        yield from iter(lambda: f.read(_CHUNK), b"")
    yield tail


def _answer(exc: urllib.error.HTTPError) -> str:
    try:
        text = exc.read(4096).decode("utf-8", errors="replace")
    except (OSError, http.client.HTTPException):
        text = ""
    finally:
        exc.close()
    return " ".join(text.split())[:200]


def upload(index: Index, wheel: Path) -> str:
    """Upload ``wheel`` to ``index``: "uploaded", or "exists" when the index has that
    file already (HTTP 409, or 400 saying so, as PyPI answers). Raises
    :class:`ShareError` when the index refuses it or cannot be reached."""
    url = upload_url(index.url)
    if urllib.parse.urlsplit(url).scheme.lower() not in ("http", "https"):
        raise ShareError(f"cannot upload to {url}: uploads go to an http(s):// index")
    boundary = f"wheelcuda-{uuid.uuid4().hex}"
    (head, tail), length = _form(wheel, boundary)
    headers = {"Content-Type": f"multipart/form-data; boundary={boundary}",
               "Content-Length": str(length)}
    auth = index.authorization()
    if auth:
        headers["Authorization"] = auth
    try:
        with web.post(url, _body(wheel, head, tail), headers, web.TRANSFER_TIMEOUT) \
                as response:
            response.read(4096)
    except urllib.error.HTTPError as exc:
        said = _answer(exc)
        if exc.code == 409 or (exc.code == 400 and "exist" in said.lower()):
            return "exists"
        what = f"{url} refused {wheel.name}: HTTP {exc.code} ({exc.reason})"
        if exc.code in (401, 403):
            who = _who(index)
            raise ShareError(f"{what} {who}", _AUTH_FIX) from None
        if 300 <= exc.code < 400:
            raise ShareError(f"{what}: the server sends uploads elsewhere",
                             f"name the upload URL itself ({exc.headers.get('Location')})"
                             ) from None
        raise ShareError(what + (f": {said}" if said else ""),
                         "check the upload URL (pypiserver: its root; devpi: the index)"
                         ) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", None) or exc
        status = _refuses(url, headers) \
            if isinstance(reason, (BrokenPipeError, ConnectionResetError)) else None
        if status in (401, 403):
            # the server answered before it read the wheel, and closed: it refused us
            who = _who(index)
            raise ShareError(f"{url} refused {wheel.name}: HTTP {status} {who}",
                             _AUTH_FIX) from None
        raise ShareError(f"could not upload {wheel.name} to {url}: could not connect "
                         f"({reason})", "check that the index is up and its URL") from None
    return "uploaded"


def _refuses(url: str, headers: dict[str, str]) -> int | None:
    """The status an empty upload gets with the same credentials (a server that refuses
    them closes the connection while a wheel is still being sent)."""
    try:
        with web.post(url, b"", {**headers, "Content-Length": "0"}, web.TRANSFER_TIMEOUT):
            return None
    except urllib.error.HTTPError as exc:
        exc.close()
        return exc.code
    except (urllib.error.URLError, OSError, http.client.HTTPException):
        return None
