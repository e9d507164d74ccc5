"""Reading a URL or a file, and downloading one into a ``.part`` file (nothing about CUDA).

- :func:`where` tells an ``http(s)://`` URL from a ``file://`` URL or a plain path;
  :func:`plain_http` whether a URL is plain http to a host other than this machine;
- :func:`read` reads a small file (a manifest) whole, up to a limit;
- :func:`fill` downloads into a ``.part`` file, resuming from its size (HTTP Range; a
  server that ignores it sends the whole file again) when the connection drops, and never
  reads past the size expected;
- :func:`check` compares a file with the size, then the sha256, a manifest lists, and
  deletes it when they differ.

A URL or a file that cannot be read is :class:`Unreachable`, with the fix the caller
gives; a file that cannot be written (a full disk) is the store's
:class:`~wheelcuda.errors.CacheError` (:func:`unwritable`), never a connection to resume.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.client
import os
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from .._probe import web
from .._rules import redact
from ..errors import CacheError, ComponentError

CHUNK = 256 * 1024
_ATTEMPTS = 3  # a connection that drops is resumed this many times in one run
#: How long :func:`answers` waits: a firewall that drops packets costs this, once a run.
ANSWER_TIMEOUT = web.ANSWER_TIMEOUT


def where(location: str) -> tuple[str, str]:
    """("http", url) or ("file", path) for an http(s):// or file:// URL or a path."""
    try:
        scheme = urllib.parse.urlsplit(location).scheme.lower()
    except ValueError as exc:  # "http://[bad": an unclosed IPv6 bracket, a bad port
        raise ComponentError(f"cannot read {location}: not a URL ({exc})",
                             "name an http(s):// or file:// URL, or a path") from exc
    if scheme in ("http", "https"):
        return "http", location
    if scheme == "file":
        return "file", urllib.request.url2pathname(urllib.parse.urlsplit(location).path)
    if scheme and len(scheme) > 1:  # not a drive letter: an unknown scheme
        raise ComponentError(f"cannot read {location}: wheelcuda reads http(s)://, file:// "
                             "and plain paths only")
    return "file", location


loopback, plain_http = redact.loopback, redact.plain_http


class Unreachable(ComponentError):
    """A URL or a file could not be read: the caller may add what to bring instead."""


def unreachable(location: str, exc: BaseException, fix: str | None) -> Unreachable:
    if isinstance(exc, urllib.error.HTTPError):
        exc.close()  # it holds the connection open
        why = f"the server answered HTTP {exc.code} ({exc.reason})"
    elif isinstance(exc, urllib.error.URLError):
        why = f"could not connect ({exc.reason})"
    elif isinstance(exc, OSError) and exc.strerror:
        why = exc.strerror
    else:
        why = str(exc) or type(exc).__name__
    return Unreachable(f"could not read {location}: {why}", fix)


def open_url(url: str, offset: int = 0) -> http.client.HTTPResponse:
    """The response to a GET of ``url`` (http(s) only: :func:`where`), from byte
    ``offset`` when it is not 0."""
    return web.get(url, web.TRANSFER_TIMEOUT, offset=offset)


@functools.lru_cache(maxsize=16)
def answers(location: str, timeout: float = ANSWER_TIMEOUT) -> str | None:
    """None when ``location`` answers (a file that is there; a URL whose server sends
    a status below 400 within ``timeout`` seconds, name lookup included, through the
    proxies a download would use), else why not, as :func:`unreachable` words it
    (``could not read URL: could not connect (...)``), the URL without credentials.
    Nothing is read past the headers; asked once a process."""
    shown = _shown(location)
    kind, target = where(location)  # not a URL: the user's to fix (ComponentError)
    if kind == "file":
        return None if os.path.exists(target) else f"could not read {shown}: no such file"
    said: list[str | None] = []

    def ask() -> None:
        try:
            with web.get(target, timeout):
                said.append(None)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            said.append(unreachable(shown, exc, None).message)

    # a thread: the socket's timeout does not cover the name lookup (getaddrinfo), which
    # offline can take far longer
    thread = threading.Thread(target=ask, name="wheelcuda-answers", daemon=True)
    thread.start()
    thread.join(timeout + 1.0)
    if not said:
        return f"could not read {shown}: no answer within {timeout:g} s"
    return said[0]


def _shown(location: str) -> str:
    """``location`` as messages show it: no credentials (_rules/redact.py)."""
    return redact.url(location)


def read(location: str, most: int, *, fix: str | None) -> bytes:
    """At most ``most`` bytes of the URL or file ``location``."""
    kind, target = where(location)
    try:
        if kind == "file":
            with open(target, "rb") as f:
                return f.read(most)
        with open_url(target) as response:
            return response.read(most)
    except (OSError, http.client.HTTPException) as exc:
        raise unreachable(location, exc, fix) from exc


def stream_sha256(stream: IO[bytes]) -> str:
    h = hashlib.sha256()
    for block in iter(lambda: stream.read(1 << 20), b""):
        h.update(block)
    return h.hexdigest()


def file_sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return stream_sha256(f)


def check(path: Path, size: int, sha256: str, *, name: str, fix: str | None) -> None:
    """Size, then sha256, as the manifest says; a file that differs is deleted, and
    ``name`` (the file and where it came from) is said not to match."""
    have = path.stat().st_size
    got = f"{have} bytes" if have != size else file_sha256(path)
    want = f"{size} bytes" if have != size else sha256
    if got == want:
        return
    path.unlink()
    what = "size" if have != size else "sha256"
    raise ComponentError(
        f"{name} does not match the manifest's {what}: expected {want}, got {got} (its "
        "copy in wheelcuda's store was deleted)", fix)


def unwritable(path: Path, exc: OSError) -> CacheError:
    return CacheError(f"cannot write {path}: {exc.strerror or exc}",
                      "free some space there, or move the cache: export "
                      "WHEELCUDA_CACHE_DIR=/a/larger/disk/wheelcuda")


@contextlib.contextmanager
def writing(path: Path, mode: str) -> Iterator[Callable[[bytes], None]]:
    """A writer to ``path`` whose failures (a full disk) are the store's errors, not a
    dropped connection to resume: only what it writes is caught, not the body's reads."""
    try:
        f = open(path, mode)  # noqa: SIM115 (closed below, after the body)
    except OSError as exc:
        raise unwritable(path, exc) from exc

    def write(block: bytes) -> None:
        try:
            f.write(block)
            f.flush()  # so that closing has nothing left to fail on
        except OSError as exc:
            raise unwritable(path, exc) from exc

    with f:
        yield write


def _once(url: str, part: Path, size: int, *, progress: Callable[[int], None],
          note: Callable[[str], None], fix: str | None) -> None:
    """One request: resume ``part`` from its size when the server honours Range,
    else start over. Stops reading one byte past the expected size."""
    have = part.stat().st_size if part.exists() else 0
    try:
        response = open_url(url, have)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # the part is no prefix of what is served now
            exc.close()
            part.unlink()
            raise ConnectionError("the server refused to resume; starting over") from exc
        raise unreachable(url, exc, fix) from exc
    except urllib.error.URLError as exc:  # no connection at all: nothing to resume
        raise unreachable(url, exc, fix) from exc
    with response:
        resumed = bool(have) and response.status == 206 and response.headers.get(
            "Content-Range", "").startswith(f"bytes {have}-")
        if have and not resumed:
            note(f"{url} was sent whole, not from byte {have}: starting over")
            have = 0
        with writing(part, "ab" if resumed else "wb") as out:
            while have <= size:
                block = response.read(min(CHUNK, size + 1 - have))
                if not block:
                    break
                out(block)
                have += len(block)
                progress(have)


def fill(url: str, part: Path, size: int, *, progress: Callable[[int], None],
         note: Callable[[str], None], fix: str | None) -> None:
    """Download ``url`` into ``part`` until it has ``size`` bytes, resuming when the
    connection drops (a few times); ``progress`` is told how many bytes it has, ``note``
    when a server starts over. ``fix`` is said when the URL cannot be read at all."""
    last: BaseException | None = None
    for _ in range(_ATTEMPTS):
        before = part.stat().st_size if part.exists() else 0
        try:
            _once(url, part, size, progress=progress, note=note, fix=fix)
            last = None
        except (OSError, http.client.HTTPException) as exc:  # the connection dropped
            last = exc
        have = part.stat().st_size if part.exists() else 0
        if have >= size:
            return
        if have <= before and last is None:
            break  # the server had nothing more to send: what it serves is short
    have = part.stat().st_size if part.exists() else 0
    raise ComponentError(
        f"the download of {url} stopped at {have} of {size} bytes"
        + (f" ({last})" if last else ": the server sent no more"),
        "run again: the download resumes from there (`wheelcuda cache prune` removes it)")
