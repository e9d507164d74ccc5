"""Reading a package index without installing anything: a project's files (PEP 691 JSON,
else PEP 503 HTML; an http(s):// index, a file:// one, or a find-links folder), and
the metadata inside an sdist (its ``PKG-INFO`` and ``pyproject.toml``), read from the
stream and stopped as soon as both are there.

uv decides whether a package "declares static metadata" from exactly these two files
(``StaticMetadata::read`` in uv-distribution, 0.13): ``uv-config`` reads them to choose
the torch entry uv accepts for the package (uv refuses ``match-runtime`` for a package
without static metadata, so such a package gets an exact torch pin instead).
"""

from __future__ import annotations

import html.parser
import http.client
import io
import json
import os
import tarfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any

from packaging.utils import (
    InvalidSdistFilename,
    canonicalize_name,
    parse_sdist_filename,
)
from packaging.version import InvalidVersion, Version

from ..errors import WheelcudaError
from ..rules import redact
from . import web

__all__ = ["PYPI", "IndexFile", "SdistMetadata", "files", "newest_sdist", "open_http",
           "sdist_metadata", "shown"]

PYPI = "https://pypi.org/simple"
_ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"
#: An sdist is read until both files are seen, and never past this much.
_SDIST_LIMIT = 256 * 2**20
_PAGE_LIMIT = 32 * 2**20


class IndexUnreadable(WheelcudaError):
    """An index or a file on it could not be read; ``status``: the HTTP status the
    server answered, if it answered."""

    def __init__(self, message: str, fix: str | None = None, status: int | None = None
                 ) -> None:
        super().__init__(message, fix)
        self.status = status


@dataclass(frozen=True)
class IndexFile:
    """One file of a project on an index."""

    filename: str
    url: str  # absolute: http(s)://, file://, or a path
    sha256: str | None = None
    #: PEP 503's ``data-requires-python`` / PEP 691's ``requires-python``
    requires_python: str | None = None
    #: PEP 592: installers take a yanked file only when pinned to it exactly
    yanked: bool = False


@dataclass(frozen=True)
class SdistMetadata:
    """The two files uv reads for static metadata, as bytes (None: not in the sdist)."""

    where: str
    pkg_info: bytes | None
    pyproject: bytes | None


class _Links(html.parser.HTMLParser):
    """The ``<a href>`` of a PEP 503 page (or a find-links page)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str, dict[str, str | None]]] = []  # (href, text, attrs)
        self._attrs: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a" and dict(attrs).get("href") is not None:
            self._attrs = dict(attrs)

    def handle_data(self, data: str) -> None:
        if self._attrs is not None:
            self.links.append((str(self._attrs["href"]), data.strip(), self._attrs))
            self._attrs = None


def _is_file(location: str) -> bool:
    return urllib.parse.urlsplit(location).scheme.lower() in ("", "file")


def _path(location: str) -> str:
    split = urllib.parse.urlsplit(location)
    return urllib.request.url2pathname(split.path) if split.scheme else location


def _urlopen(url: str, accept: str | None = None) -> http.client.HTTPResponse:
    """An open http(s) response, or IndexUnreadable saying why (credentials never shown)."""
    try:
        response = web.get(url, web.INDEX_TIMEOUT, accept=accept)
    except urllib.error.HTTPError as exc:
        exc.close()
        raise IndexUnreadable(f"{shown(url)}: the server answered HTTP {exc.code} "
                          f"({exc.reason})", status=exc.code) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise IndexUnreadable(f"{shown(url)}: could not connect ({reason})") from None
    return response


def open_http(url: str, accept: str | None = None) -> http.client.HTTPResponse:
    """An open response to a GET of the http(s) ``url``, its credentials sent as a Basic
    header (never to another host a redirect leads to), or :class:`IndexUnreadable`."""
    return _urlopen(url, accept)


def _get(url: str, accept: str | None = None) -> tuple[bytes, str, str]:
    """(body, content type, final URL) of an http(s) GET."""
    with _urlopen(url, accept) as response:
        try:
            body = response.read(_PAGE_LIMIT + 1)
        except (OSError, http.client.HTTPException) as exc:
            raise IndexUnreadable(f"{shown(url)}: the answer was cut ({exc})") from None
        return body, response.headers.get("Content-Type", ""), response.geturl()


def _from_json(body: bytes, base: str) -> list[IndexFile]:
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise IndexUnreadable(f"{shown(base)}: not a PEP 691 answer ({exc})") from None
    out = []
    for f in data.get("files", []) if isinstance(data, dict) else []:
        if isinstance(f, dict) and isinstance(f.get("filename"), str):
            hashes = f.get("hashes")
            sha = hashes.get("sha256") if isinstance(hashes, dict) else None
            requires = f.get("requires-python")
            url = urllib.parse.urljoin(base, str(f.get("url")))
            if not _may_point_at(base, url):
                continue
            out.append(IndexFile(f["filename"], url,
                                 sha, requires if isinstance(requires, str) else None,
                                 bool(f.get("yanked"))))
    return out


def _may_point_at(base: str, url: str) -> bool:
    """A page from the network points only at http(s) files, never at this machine's
    (``file:///home/...``): what it names is downloaded and installed. A local index's
    page may name anything."""
    return _is_file(base) or urllib.parse.urlsplit(url).scheme.lower() in ("http", "https")


def _from_html(text: str, base: str) -> list[IndexFile]:
    parser = _Links()
    parser.feed(text)
    out = []
    for href, label, attrs in parser.links:
        url, _, fragment = urllib.parse.urljoin(base, href).partition("#")
        if not _may_point_at(base, url):
            continue
        name = label or os.path.basename(urllib.parse.urlsplit(url).path)
        sha = fragment.split("=", 1)[1] if fragment.startswith("sha256=") else None
        out.append(IndexFile(urllib.parse.unquote(name), url, sha,
                             attrs.get("data-requires-python"), "data-yanked" in attrs))
    return out


def files(index: str, name: str, *, flat: bool = False) -> list[IndexFile]:
    """The files of project ``name`` on ``index``: an http(s):// or file:// simple index,
    or a find-links folder or page (``flat``: every file on it; callers filter by name)."""
    project = str(canonicalize_name(name))
    if flat and not _is_file(index):
        body, _, final = _get(index, "text/html")
        return _from_html(body.decode("utf-8", errors="replace"), final)
    if _is_file(index):
        root = _path(index)
        page = os.path.join(root, project, "index.html")
        if os.path.isfile(page):
            with open(page, encoding="utf-8", errors="replace") as f:
                return _from_html(f.read(), "file://" + page)
        if os.path.isdir(os.path.join(root, project)):  # a folder per project, no page
            root = os.path.join(root, project)
        try:
            names = sorted(os.listdir(root))
        except OSError as exc:
            raise IndexUnreadable(f"{shown(index)}: {exc.strerror or exc}") from None
        return [IndexFile(n, os.path.join(root, n)) for n in names]
    # the project goes into the path; a query (GitLab's ?private_token=) stays a query
    split = urllib.parse.urlsplit(index)
    url = urllib.parse.urlunsplit(split._replace(path=split.path.rstrip("/") + f"/{project}/"))
    body, kind, final = _get(url, _ACCEPT)
    if "json" in kind:
        return _from_json(body, final)
    return _from_html(body.decode("utf-8", errors="replace"), final)


def newest_sdist(found: Sequence[IndexFile], name: str,
                 version: str | None = None) -> IndexFile | None:
    """The sdist of ``name`` at ``version``, else its newest final release (pure)."""
    wanted = canonicalize_name(name)
    best: tuple[Version, IndexFile] | None = None
    for f in found:
        try:
            sname, sversion = parse_sdist_filename(f.filename)
        except (InvalidSdistFilename, InvalidVersion):
            continue
        if sname != wanted:
            continue
        if version is not None:
            try:
                if sversion == Version(version):
                    return f
            except InvalidVersion:
                return None
            continue
        if sversion.is_prerelease:
            continue
        if best is None or sversion > best[0]:
            best = (sversion, f)
    return best[1] if best else None


class _Limited(io.RawIOBase):
    """A stream that ends after ``limit`` bytes: an sdist is never read past it."""

    def __init__(self, raw: IO[bytes], limit: int) -> None:
        self.raw, self.left = raw, limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.left <= 0:
            return 0
        data = self.raw.read(min(len(buffer), self.left))
        buffer[:len(data)] = data
        self.left -= len(data)
        return len(data)


def _open(location: str) -> IO[bytes]:
    if _is_file(location):
        path = _path(location)
        if not os.path.isfile(path):
            raise IndexUnreadable(f"cannot read {location}: not a file")
        try:
            return open(path, "rb")
        except OSError as exc:
            raise IndexUnreadable(f"cannot read {location}: {exc.strerror or exc}") from None
    return _urlopen(location)


def _top_level(member: str) -> str | None:
    """``pkg-1.0/PKG-INFO`` -> ``PKG-INFO``; deeper members -> None."""
    parts = member.strip("/").split("/")
    return parts[1] if len(parts) == 2 else None


_MEMBER_LIMIT = 2**20  # a PKG-INFO or pyproject.toml is kilobytes


def _members(stream: IO[bytes], filename: str) -> Iterator[tuple[str, bytes]]:
    """(top-level name, content) of PKG-INFO and pyproject.toml, as they come; never
    more than :data:`_SDIST_LIMIT` of the archive or :data:`_MEMBER_LIMIT` of a member."""
    wanted = ("PKG-INFO", "pyproject.toml")
    limited = io.BufferedReader(_Limited(stream, _SDIST_LIMIT))
    if filename.endswith(".zip"):
        with zipfile.ZipFile(io.BytesIO(limited.read())) as z:
            for info in z.infolist():
                if _top_level(info.filename) in wanted and info.file_size < _MEMBER_LIMIT:
                    yield str(_top_level(info.filename)), z.read(info)
        return
    with tarfile.open(fileobj=limited, mode="r|*") as tar:
        for member in tar:
            top = _top_level(member.name)
            if top in wanted and member.isfile() and member.size < _MEMBER_LIMIT:
                handle = tar.extractfile(member)
                if handle is not None:
                    yield str(top), handle.read()


def sdist_metadata(f: IndexFile, enough: Callable[[dict[str, bytes]], bool] | None = None
                   ) -> SdistMetadata:
    """PKG-INFO and pyproject.toml of the sdist ``f``, read from its stream until both
    are there, or ``enough`` says what was read decides already."""
    found: dict[str, bytes] = {}
    with _open(f.url) as stream:
        try:
            for top, data in _members(stream, f.filename):
                found.setdefault(top, data)
                if len(found) == 2 or (enough is not None and enough(found)):
                    break
        except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError,
                http.client.HTTPException) as exc:
            raise IndexUnreadable(f"cannot read the sdist {shown(f.url)}: {exc}") from None
    return SdistMetadata(f"{f.filename} from {shown(f.url)}", found.get("PKG-INFO"),
                         found.get("pyproject.toml"))


def shown(url: str) -> str:
    """A URL as messages show it: without credentials (rules/redact.py)."""
    return redact.url(url)
