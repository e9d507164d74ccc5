"""Reading a package index without installing anything: a project's files (PEP 691 JSON,
else PEP 503 HTML; an http(s):// index, a file:// one, or a find-links folder), and the
newest sdist of a release among them.
"""

from __future__ import annotations

import html.parser
import http.client
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass

from packaging.utils import (
    InvalidSdistFilename,
    canonicalize_name,
    parse_sdist_filename,
)
from packaging.version import InvalidVersion, Version

from .._rules import redact
from ..errors import WheelcudaError
from . import web

PYPI = "https://pypi.org/simple"
_ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"
#: An sdist read from an index (to read its setup.py) is never larger than this.
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


class Pages:
    """The index pages of one plan, each read once: ``install NAME==V`` asks the same
    page for the sdist's sha256 (the wheel cache's key) and then for the sdist itself
    (its setup.py), and two reads cost two round trips and may disagree. A new plan
    makes a new one, so an index that changed is read afresh."""

    def __init__(self) -> None:
        self._read: dict[tuple[str, str, bool], list[IndexFile] | Exception] = {}

    def files(self, index: str, name: str, *, flat: bool = False) -> list[IndexFile]:
        """:func:`files`, remembered (its error too)."""
        key = (index, str(canonicalize_name(name)), flat)
        if key not in self._read:
            try:
                self._read[key] = files(index, name, flat=flat)
            except (WheelcudaError, ValueError) as exc:
                self._read[key] = exc
        found = self._read[key]
        if isinstance(found, Exception):
            raise found
        return list(found)


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


def download(f: IndexFile, limit: int = _SDIST_LIMIT) -> bytes:
    """The bytes of a file on an index (a path, a file:// or an http(s):// URL), never
    more than ``limit``: :class:`IndexUnreadable` when it cannot be read or is larger."""
    try:
        if _is_file(f.url):
            with open(_path(f.url), "rb") as local:
                data = local.read(limit + 1)
        else:
            with _urlopen(f.url) as response:
                data = response.read(limit + 1)
    except (OSError, http.client.HTTPException) as exc:
        raise IndexUnreadable(f"{shown(f.url)}: cannot be read ({exc})") from None
    if len(data) > limit:
        raise IndexUnreadable(f"{shown(f.url)}: larger than {limit // 2**20} MiB")
    return data


def shown(url: str) -> str:
    """A URL as messages show it: without credentials (_rules/redact.py)."""
    return redact.url(url)
