"""Credentials out of what wheelcuda shows, writes and sends (pure): one redactor for the
lines on stderr, ``--explain``, the wheel cache's ``build.json`` and the key that travels
to a team's index.

A URL carries credentials two ways: its userinfo (``https://alice:TOKEN@host/``, as pip,
uv and twine take them) and its query (``?private_token=...``, GitLab's package
registry; ``?X-Amz-Signature=...``, a presigned S3 link; ``?sig=...``, an Azure SAS).
:func:`url` drops the userinfo and replaces the values of query parameters whose names
say secret with ``***``; the host keeps its IPv6 brackets and its port. The key of a
build holds the redacted form, so that teammates with different tokens share one key.
What the installer is handed keeps the real URL.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Sequence

HIDDEN = "***"
#: A URL inside free text: a scheme, ``://`` and what follows up to a space or a quote.
_URL = re.compile(r"""[A-Za-z][A-Za-z0-9+.-]*://[^\s'"<>]+""")
#: Query parameter names that carry a secret (matched as a part of the name:
#: ``private_token``, ``X-Amz-Signature``, ``api_key``, ``sig``, ``access_token``).
_SECRET = re.compile(r"(token|secret|passw|pwd|key|auth|sig|credential|session)",
                     re.IGNORECASE)


def without_userinfo(location: str) -> str:
    """``location`` without ``user:password@``, all else as written (brackets, port,
    query): what a request is sent to, its credentials going in a header instead. The
    userinfo is what urllib (and so pip and uv) takes for it: the authority, up to the
    first ``/``, ``?`` or ``#``, up to its last ``@``; an ``@`` in a path
    (``https://tok@host/pkg@1.0/``) is the path's."""
    scheme, sep, rest = location.partition("://")
    if not sep:
        return location
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    at = authority.rfind("@")
    return f"{scheme}://{rest[at + 1:]}" if at >= 0 else location


def _slashed_password(location: str) -> str:
    """``location`` shown without what may be a password holding ``/`` unencoded
    (``https://user:12/x@host/``): urllib reads ``user:12`` as a host and a port, so no
    request carries it, but shown as it is it would print the password. With no userinfo
    left and an authority of ``name:value``, all up to the last ``@`` before the query
    goes. A port and an ``@`` in the path (``https://host:8443/r.git@v1``) look the same:
    shown, it loses its host, which is the safe side of the two."""
    scheme, sep, rest = location.partition("://")
    head = re.split(r"[?#]", rest, maxsplit=1)[0]
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    at = head.rfind("@")
    if sep and at >= 0 and "@" not in authority and ":" in authority:
        return f"{scheme}://{rest[at + 1:]}"
    return location


def host_only(location: str) -> str:
    """``scheme://host`` of a URL that may not parse: the part after the last ``@``
    before the path, so that a password holding ``/`` or ``@`` is not shown either."""
    scheme, sep, rest = location.partition("://")
    if not sep:
        scheme, rest = "", location
    last = rest.rfind("@")
    host = re.split(r"[/?#]", rest[last + 1:] if last >= 0 else rest, maxsplit=1)[0]
    return f"{scheme}{sep}{host}"


def url(location: str) -> str:
    """``location`` as it may be shown or written: no userinfo (but an ssh URL's user
    name, ``git+ssh://git@host/``, which names an account, not a secret), secret query
    values :data:`HIDDEN`; one that does not parse as ``scheme://host``."""
    scheme, _, rest = location.partition("://")
    user = rest.split("/", 1)[0].rpartition("@")[0]
    # an ssh URL keeps its user name; a secret in its query is still hidden
    ssh_user = scheme.lower().endswith("ssh") and user and ":" not in user
    plain = location if ssh_user else _slashed_password(without_userinfo(location))
    try:
        split = urllib.parse.urlsplit(plain)
        split.port  # noqa: B018 (raises for a port that is no number)
    except ValueError:
        return host_only(location)
    if not split.query:
        return plain
    pairs = urllib.parse.parse_qsl(split.query, keep_blank_values=True)
    hidden = [(k, HIDDEN if _SECRET.search(k) and v else v) for k, v in pairs]
    if hidden == pairs:
        return plain
    query = "&".join(f"{urllib.parse.quote(k, safe='')}="
                     f"{v if v == HIDDEN else urllib.parse.quote(v, safe='')}"
                     for k, v in hidden)
    return urllib.parse.urlunsplit(split._replace(query=query))


def text(words: str) -> str:
    """Free text (an argument, a message) with each URL in it passed through :func:`url`
    (a ``)``, ``,`` or ``.`` that ends the URL in prose is not part of it)."""
    def one(m: re.Match[str]) -> str:
        found = m[0].rstrip(").,;:]")
        return url(found) + m[0][len(found):]
    return _URL.sub(one, words)


def args(argv: Sequence[str]) -> list[str]:
    """An argument list as it may be shown or written."""
    return [text(a) for a in argv]


def loopback(host: str | None) -> bool:
    return host in ("127.0.0.1", "::1", "localhost")


def plain_http(location: str) -> bool:
    """Whether ``location`` is a plain ``http://`` URL to a host other than this machine,
    where a password would cross the network in clear (one that does not parse is not:
    the caller's reader says what is wrong with it)."""
    try:
        parts = urllib.parse.urlsplit(location)
    except ValueError:
        return False
    return parts.scheme.lower() == "http" and not loopback(parts.hostname)
