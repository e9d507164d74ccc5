"""wheelcuda's one HTTP client: every request to a package index, NVIDIA's archives or a
team's index goes through here (the standard library's urllib underneath), so the rules
below hold for all of them.

- **TLS**: the standard library's default context, made for each connection: certificates
  always verified, against the system's CA store; OpenSSL reads ``SSL_CERT_FILE`` and
  ``SSL_CERT_DIR`` for a company's own CA, as uv does with ``SSL_CERT_FILE``. wheelcuda
  has no setting that turns verification off.
- **Proxies**: urllib's, read from the environment (``https_proxy``, ``http_proxy``,
  ``no_proxy``) when each request is made.
- **Timeouts**: how long a socket may stay silent (connecting or reading), per use:
  :data:`INDEX_TIMEOUT`, :data:`TRANSFER_TIMEOUT`, :data:`ANSWER_TIMEOUT`.
- **User-Agent**: :data:`AGENT` on every request, so an index's logs can tell wheelcuda's
  reads from an installer's.
- **Credentials**: a URL's ``user:password`` travels as a Basic Authorization header,
  never in the request line (:func:`request`), and only to the URL's own origin (scheme,
  host, port): a redirect to another one is followed without it (a team's pypiserver
  sends a project it lacks on to pypi.org). A POST is never redirected (:func:`post`).

Whether plain http may be used at all is the callers' decision (a manifest over plain
http needs ``WHEELCUDA_ALLOW_HTTP=1``, credentials are not sent over it:
:mod:`wheelcuda._sources.redist.store_archives`, :mod:`wheelcuda._team.probe_credentials`).
Errors are urllib's
(``HTTPError``, ``URLError``, ``OSError``, ``http.client.HTTPException``): each caller
words them for its own users.
"""

from __future__ import annotations

import base64
import http.client
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping
from typing import IO, Any

from .._rules import redact

AGENT = "wheelcuda (+https://github.com/wheelcuda)"
#: An index's page, an sdist's head, a wheel a team's index serves.
INDEX_TIMEOUT = 30.0
#: A manifest, an archive of NVIDIA's (hundreds of MB, resumed when it drops), an upload.
TRANSFER_TIMEOUT = 60.0
#: Whether a server answers at all (doctor): a firewall that drops packets costs this.
ANSWER_TIMEOUT = 5.0


def same_origin(url: str, other: str) -> bool:
    """Whether two URLs share scheme, host and port: where credentials may go."""
    a, b = urllib.parse.urlsplit(url), urllib.parse.urlsplit(other)
    return (a.scheme.lower(), a.hostname, a.port) == (b.scheme.lower(), b.hostname, b.port)


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Redirects followed, but credentials never carried to another origin."""

    def redirect_request(  # noqa: PLR0917 (urllib's signature)
            self, req: urllib.request.Request, fp: IO[bytes], code: int,
            msg: str, headers: Any, newurl: str) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and not same_origin(req.full_url, new.full_url):
            new.remove_header("Authorization")
        return new


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A POST is never sent on: redirected, it becomes a GET that succeeds."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:  # noqa: ARG002
        return None


def request(url: str, *, accept: str | None = None, offset: int = 0,
            headers: Mapping[str, str] | None = None, data: bytes | Iterable[bytes] | None = None,
            method: str | None = None) -> urllib.request.Request:
    """A request for the http(s) ``url`` with :data:`AGENT`; its credentials
    (``https://user:token@host/...``) sent as a Basic Authorization header, as uv sends
    them, and kept out of the URL; from byte ``offset`` (HTTP Range) when it is not 0."""
    split = urllib.parse.urlsplit(url)
    sent = {"User-Agent": AGENT}
    if accept:
        sent["Accept"] = accept
    if offset:
        sent["Range"] = f"bytes={offset}-"
    if split.username or split.password:
        user = urllib.parse.unquote(split.username or "")
        secret = urllib.parse.unquote(split.password or "")
        token = base64.b64encode(f"{user}:{secret}".encode()).decode()
        sent["Authorization"] = f"Basic {token}"
        url = redact.without_userinfo(url)  # its query may hold a token the index wants
    sent.update(headers or {})
    return urllib.request.Request(url, data=data, headers=sent,  # noqa: S310 (http(s): callers)
                                  method=method)


def send(req: urllib.request.Request, timeout: float, *, follow: bool = True
         ) -> http.client.HTTPResponse:
    """The open response to ``req``; redirects followed (``follow``, credentials kept to
    their origin) or not. The opener is made for each request, so the proxies and CA
    files in force then are the ones used."""
    opener = urllib.request.build_opener(_Redirects if follow else _NoRedirect)
    response: http.client.HTTPResponse = opener.open(req, timeout=timeout)
    return response


def get(url: str, timeout: float, *, accept: str | None = None, offset: int = 0
        ) -> http.client.HTTPResponse:
    """The open response to a GET of the http(s) ``url`` (:func:`request`)."""
    return send(request(url, accept=accept, offset=offset), timeout)


def post(url: str, data: bytes | Iterable[bytes], headers: Mapping[str, str],
         timeout: float) -> http.client.HTTPResponse:
    """The open response to a POST of ``data`` to the http(s) ``url``, never redirected."""
    return send(request(url, headers=headers, data=data, method="POST"), timeout,
                follow=False)
