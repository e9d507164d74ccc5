"""Reading a package index without installing anything: a project's files (PEP 691 JSON,
else PEP 503 HTML; an http(s):// index, a file:// one, or a find-links folder), and
the metadata inside an sdist (its ``PKG-INFO`` and ``pyproject.toml``), read from the
stream and stopped as soon as both are there.

uv decides whether a package "declares static metadata" from exactly these two files
(``StaticMetadata::read`` in uv-distribution, 0.13): ``uv-config`` reads them to choose
the torch entry uv accepts for the package (issue 16).
"""

from __future__ import annotations

import html.parser
import io
import json
import os
import tarfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from packaging.utils import (
    InvalidSdistFilename,
    canonicalize_name,
    parse_sdist_filename,
)
from packaging.version import InvalidVersion, Version

from ..errors import WheelcudaError

__all__ = ["IndexFile", "SdistMetadata", "files", "newest_sdist", "sdist_metadata"]

PYPI = "https://pypi.org/simple"
_ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"
_AGENT = {"User-Agent": "wheelcuda (+https://github.com/wheelcuda)"}
_TIMEOUT = 30.0
#: An sdist is read until both files are seen, and never past this much.
_SDIST_LIMIT = 256 * 2**20
_PAGE_LIMIT = 32 * 2**20


class IndexError_(WheelcudaError):
    """An index or a file on it could not be read."""


@dataclass(frozen=True)
class IndexFile:
    """One file of a project on an index."""

    filename: str
    url: str  # absolute: http(s)://, file://, or a path
    sha256: str | None = None


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
        self.links: list[tuple[str, str]] = []  # (href, text)
        self._href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href")

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self.links.append((self._href, data.strip()))
            self._href = None


def _is_file(location: str) -> bool:
    return urllib.parse.urlsplit(location).scheme.lower() in ("", "file")


def _path(location: str) -> str:
    split = urllib.parse.urlsplit(location)
    return urllib.request.url2pathname(split.path) if split.scheme else location


def _get(url: str, accept: str | None = None) -> tuple[bytes, str, str]:
    """(body, content type, final URL) of an http(s) GET."""
    headers = dict(_AGENT)
    if accept:
        headers["Accept"] = accept
    request = urllib.request.Request(url, headers=headers)  # noqa: S310 (http(s): callers)
    try:
        with urllib.request.urlopen(request, timeout=_TIMEOUT) as response:  # noqa: S310
            body = response.read(_PAGE_LIMIT + 1)
            return body, response.headers.get("Content-Type", ""), response.geturl()
    except urllib.error.HTTPError as exc:
        exc.close()
        raise IndexError_(f"{url}: the server answered HTTP {exc.code} ({exc.reason})") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise IndexError_(f"{url}: could not connect ({reason})") from None


def _from_json(body: bytes, base: str) -> list[IndexFile]:
    data = json.loads(body)
    out = []
    for f in data.get("files", []):
        if isinstance(f, dict) and isinstance(f.get("filename"), str):
            hashes = f.get("hashes")
            sha = hashes.get("sha256") if isinstance(hashes, dict) else None
            out.append(IndexFile(f["filename"], urllib.parse.urljoin(base, str(f.get("url"))),
                                 sha))
    return out


def _from_html(text: str, base: str) -> list[IndexFile]:
    parser = _Links()
    parser.feed(text)
    out = []
    for href, label in parser.links:
        url, _, fragment = urllib.parse.urljoin(base, href).partition("#")
        name = label or os.path.basename(urllib.parse.urlsplit(url).path)
        sha = fragment.split("=", 1)[1] if fragment.startswith("sha256=") else None
        out.append(IndexFile(urllib.parse.unquote(name), url, sha))
    return out


def files(index: str, name: str) -> list[IndexFile]:
    """The files of project ``name`` on ``index``: an http(s):// or file:// simple index,
    or a find-links folder (every file in it; callers filter by name)."""
    project = str(canonicalize_name(name))
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
            raise IndexError_(f"{index}: {exc.strerror or exc}") from None
        return [IndexFile(n, os.path.join(root, n)) for n in names]
    url = index.rstrip("/") + f"/{project}/"
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


def _open(location: str) -> io.BufferedIOBase:
    if _is_file(location):
        try:
            return open(_path(location), "rb")
        except OSError as exc:
            raise IndexError_(f"cannot read {location}: {exc.strerror or exc}") from None
    request = urllib.request.Request(location, headers=_AGENT)  # noqa: S310
    try:
        response = urllib.request.urlopen(request, timeout=_TIMEOUT)  # noqa: S310
    except urllib.error.HTTPError as exc:
        exc.close()
        raise IndexError_(f"{location}: the server answered HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise IndexError_(f"{location}: could not connect ({reason})") from None
    return response  # type: ignore[no-any-return]


def _top_level(member: str) -> str | None:
    """``pkg-1.0/PKG-INFO`` -> ``PKG-INFO``; deeper members -> None."""
    parts = member.strip("/").split("/")
    return parts[1] if len(parts) == 2 else None


def _members(stream: io.BufferedIOBase, filename: str) -> Iterator[tuple[str, bytes]]:
    """(top-level name, content) of PKG-INFO and pyproject.toml, as they come."""
    wanted = ("PKG-INFO", "pyproject.toml")
    if filename.endswith(".zip"):
        raw = stream.read(_SDIST_LIMIT)
        with zipfile.ZipFile(io.BytesIO(raw)) as z:
            for info in z.infolist():
                if _top_level(info.filename) in wanted:
                    yield str(_top_level(info.filename)), z.read(info)
        return
    with tarfile.open(fileobj=stream, mode="r|*") as tar:
        for member in tar:
            top = _top_level(member.name)
            if top in wanted and member.isfile() and member.size < 2**20:
                handle = tar.extractfile(member)
                if handle is not None:
                    yield str(top), handle.read()


def sdist_metadata(f: IndexFile) -> SdistMetadata:
    """PKG-INFO and pyproject.toml of the sdist ``f``, read from its stream."""
    found: dict[str, bytes] = {}
    with _open(f.url) as stream:
        try:
            for top, data in _members(stream, f.filename):
                found.setdefault(top, data)
                if len(found) == 2:
                    break
        except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as exc:
            raise IndexError_(f"cannot read the sdist {f.url}: {exc}") from None
    return SdistMetadata(f"{f.filename} from {_shown(f.url)}", found.get("PKG-INFO"),
                         found.get("pyproject.toml"))


def _shown(url: str) -> str:
    """A URL as messages show it: without credentials."""
    split = urllib.parse.urlsplit(url)
    if split.username or split.password:
        split = split._replace(netloc=split.hostname or "")
    return urllib.parse.urlunsplit(split)
