"""wheelcuda's one HTTP client (_probe/web.py), against servers on 127.0.0.1 started here:
credentials go to their own origin only, a POST is never redirected, a silent server
costs the timeout and no more, and every request says who asks (the User-Agent), from
each of the three callers (an index's pages, NVIDIA's archives, a team's uploads)."""

from __future__ import annotations

import contextlib
import socket
import time
import urllib.error
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread

import pytest

from wheelcuda._probe import index, web
from wheelcuda._store import transfer

AUTH = "Basic dTpw"  # u:p


@dataclass
class Seen:
    """What a server was asked: (method, path, headers) each time."""

    url: str = ""
    routes: dict[str, tuple[int, str]] = field(default_factory=dict)  # path -> (status, Location)
    asked: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)


@contextlib.contextmanager
def server() -> Iterator[Seen]:
    """A 127.0.0.1 server: a path in ``routes`` answers its status and Location, any
    other ``ok``; a POST's body is read and dropped."""
    seen = Seen()

    class Handler(BaseHTTPRequestHandler):
        def answer(self) -> None:
            seen.asked.append((self.command, self.path, dict(self.headers.items())))
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, location = seen.routes.get(self.path, (200, ""))
            self.send_response(status)
            if location:
                self.send_header("Location", location)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        do_GET = do_POST = answer

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    seen.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def _with_user(url: str) -> str:
    return url.replace("http://", "http://u:p@")


def test_credentials_go_as_a_header_and_stay_with_their_origin() -> None:
    with server() as site, server() as elsewhere:
        site.routes["/away"] = (302, f"{elsewhere.url}/there")
        site.routes["/stay"] = (302, "/here")
        with web.get(_with_user(site.url) + "/away", web.INDEX_TIMEOUT) as response:
            assert response.read() == b"ok"
        with web.get(_with_user(site.url) + "/stay", web.INDEX_TIMEOUT) as response:
            assert response.read() == b"ok"
    assert [(p, h.get("Authorization")) for _, p, h in site.asked] == [
        ("/away", AUTH), ("/stay", AUTH), ("/here", AUTH)]  # same origin: kept
    [(_, path, headers)] = elsewhere.asked
    assert path == "/there" and "Authorization" not in headers


def test_another_port_is_another_origin() -> None:
    assert web.same_origin("https://Idx.example.com/simple/", "https://idx.example.com/f/x")
    assert not web.same_origin("http://127.0.0.1:1/", "http://127.0.0.1:2/")
    assert not web.same_origin("https://h/", "http://h/")  # no downgrade with a password
    assert not web.same_origin("https://h/", "https://h.evil/")


def test_a_post_is_never_redirected() -> None:
    with server() as site, server() as elsewhere:
        site.routes["/upload/"] = (302, f"{elsewhere.url}/upload/")
        with pytest.raises(urllib.error.HTTPError) as caught:
            web.post(site.url + "/upload/", b"wheel", {"Authorization": AUTH,
                                                       "Content-Length": "5"},
                     web.TRANSFER_TIMEOUT)
        caught.value.close()
    assert caught.value.code == 302
    assert [(m, p) for m, p, _ in site.asked] == [("POST", "/upload/")]
    assert elsewhere.asked == []


def test_a_silent_server_costs_the_timeout() -> None:
    """A server that takes the connection and never answers (the kernel accepts it into
    the backlog): the read times out after the timeout given, not the default 30 s."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        start = time.monotonic()
        with pytest.raises(OSError, match="timed out"):
            web.get(f"http://127.0.0.1:{silent.getsockname()[1]}/", 0.3)
        assert time.monotonic() - start < 5


def test_every_caller_says_who_asks(tmp_path: Path) -> None:
    with server() as site:
        index.files(site.url + "/simple/", "demo")
        transfer.read(site.url + "/manifest.json", 10, fix=None)
        transfer.fill(site.url + "/archive", tmp_path / "part", 2, progress=lambda _: None,
                      note=lambda _: None, fix=None)
        assert transfer.answers(site.url + "/") is None
        with web.post(site.url + "/", b"", {"Content-Length": "0"}, web.TRANSFER_TIMEOUT):
            pass
    assert [h.get("User-Agent") for _, _, h in site.asked] == [web.AGENT] * 5
    assert site.asked[0][2]["Accept"].startswith("application/vnd.pypi.simple.v1+json")


def test_a_resumed_download_asks_from_its_offset() -> None:
    req = web.request("https://h/archive.tar.xz", offset=1024)
    assert req.get_header("Range") == "bytes=1024-"
    assert req.get_header("User-agent") == web.AGENT
    assert web.request("https://h/x").get_header("Range") is None
