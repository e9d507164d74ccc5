"""A real package index for the tests of a team's index: pypiserver (from PyPI) on 127.0.0.1,
on a free port, with authentication on (user ``team``, password ``s3cret``, in an
htpasswd file made with passlib), its packages in a folder of the test's own; and tiny
wheels made by hand, and a tiny HTTP server that serves given pages (and misbehaves on
request).

pypiserver takes uploads at its root (``url``) and serves the simple index under
``/simple/`` (``simple``). It answers 401 when no credentials are sent, 403 for wrong
ones, and 409 for a file it has already (400 to twine).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import warnings
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

USER, PASSWORD = "team", "s3cret"


@dataclass(frozen=True)
class Server:
    """A running pypiserver: uploads at ``url``, the simple index at ``simple``."""

    url: str
    simple: str
    packages: Path
    log: Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def htpasswd(path: Path, users: Mapping[str, str]) -> Path:
    with warnings.catch_warnings():  # passlib imports the deprecated `crypt`
        warnings.simplefilter("ignore")
        from passlib.apache import HtpasswdFile  # noqa: PLC0415
    ht = HtpasswdFile(str(path), new=True)
    for user, password in users.items():
        ht.set_password(user, password)
    ht.save()
    return path


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@contextlib.contextmanager
def pypiserver(folder: Path, authenticate: str = "update,download,list",
               users: Mapping[str, str] | None = None) -> Iterator[Server]:
    """pypiserver serving ``folder/packages``; ``authenticate`` the actions that need
    credentials ("update": uploads only). Stopped, and waited for, on the way out."""
    packages = folder / "packages"
    packages.mkdir(parents=True, exist_ok=True)
    passwords = htpasswd(folder / "htpasswd", users or {USER: PASSWORD})
    port = free_port()
    log = folder / "pypiserver.log"
    argv = [sys.executable, "-m", "pypiserver", "run", "-i", "127.0.0.1", "-p", str(port),
            "-a", authenticate, "-P", str(passwords), "--disable-fallback",
            "--server", "wsgiref", "--health-endpoint", "/health", str(packages)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    root = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 30
        while not _answers(root + "health"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"pypiserver did not start:\n{log.read_text()}")
            time.sleep(0.1)
        yield Server(root, root + "simple/", packages, log)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- tiny wheels --------------------------------------------------------------------------

def _record_hash(data: bytes) -> str:
    raw = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def tiny_wheel(folder: Path, name: str = "demo_pkg", version: str = "1.0.0",
               tag: str = "py3-none-any", *, data_script: bool = False,
               extra: Mapping[str, bytes] | None = None) -> Path:
    """A real, installable wheel with one module (and a script in ``.data`` when
    ``data_script``), written by hand: no build, no network."""
    info = f"{name}-{version}.dist-info"
    files: dict[str, bytes] = {
        f"{name}/__init__.py": f"VALUE = {version!r}\n".encode(),
        f"{info}/METADATA": (f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\n"
                             f"Version: {version}\nSummary: a test\n\nA description.\n"
                             "Version: not a header\n").encode(),
        f"{info}/WHEEL": (f"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
                          f"Tag: {tag}\n").encode(),
    }
    if data_script:
        files[f"{name}-{version}.data/scripts/demo-run"] = b"#!python\nprint('hi')\n"
    files.update(extra or {})
    record = "".join(f"{n},{_record_hash(d)},{len(d)}\n" for n, d in files.items())
    files[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files.items():
            z.writestr(n, d)
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- a tiny server of given pages ---------------------------------------------------------

@dataclass
class Page:
    """What one path answers: ``cut`` sends only that many bytes of the body, after a
    Content-Length of the whole, then closes."""

    body: bytes
    content_type: str = "text/html"
    status: int = 200
    cut: int | None = None
    location: str | None = None


@dataclass
class Pages:
    url: str
    routes: dict[str, Page] = field(default_factory=dict)
    seen: list[tuple[str, str | None]] = field(default_factory=list)  # (path, auth)


@contextlib.contextmanager
def pages(routes: dict[str, Page] | None = None) -> Iterator[Pages]:
    """A 127.0.0.1 server of ``routes`` (path -> :class:`Page`; others are 404)."""
    served = Pages("", dict(routes or {}))

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            served.seen.append((self.path, self.headers.get("Authorization")))
            page = served.routes.get(self.path)
            if page is None:
                self.send_error(404)
                return
            self.send_response(page.status)
            self.send_header("Content-Type", page.content_type)
            if page.location:
                self.send_header("Location", page.location)
            self.send_header("Content-Length", str(len(page.body)))
            self.end_headers()
            body = page.body if page.cut is None else page.body[:page.cut]
            self.wfile.write(body)
            self.wfile.flush()
            if page.cut is not None:
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    served.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def zip_bytes(files: Mapping[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for n, d in files.items():
            z.writestr(n, d)
    return buffer.getvalue()
