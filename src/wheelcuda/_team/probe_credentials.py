"""Who wheelcuda is on a team's index of built wheels, taken as uv takes it: the URL's
``user:password``, else WHEELCUDA_INDEX_USERNAME/WHEELCUDA_INDEX_PASSWORD (from the
run's environment), else netrc's entry for the host, else keyring when it is installed
and a username is known, else anonymous. Reads only; a password is never shown:
:class:`Index` hides it."""

from __future__ import annotations

import base64
import netrc
import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

from .. import _report as report
from .._rules import redact
from .rules import PASSWORD_VAR, USERNAME_VAR


@dataclass(frozen=True)
class Index:
    """A team's index: its URL (without credentials) and who wheelcuda is there."""

    url: str
    username: str | None = None
    password: str | None = None

    def __repr__(self) -> str:
        hidden = None if self.password is None else "***"
        return f"Index(url={self.url!r}, username={self.username!r}, password={hidden!r})"

    __str__ = __repr__

    def authorization(self) -> str | None:
        """The Basic Authorization header's value, None when anonymous."""
        if self.username is None and self.password is None:
            return None
        token = f"{self.username or ''}:{self.password or ''}".encode()
        return "Basic " + base64.b64encode(token).decode()


# -- credentials --------------------------------------------------------------------------

def _from_netrc(host: str, environ: Mapping[str, str], username: str | None
                ) -> tuple[str | None, str | None]:
    """(login, password) for ``host`` in $NETRC or $HOME/.netrc."""
    path = environ.get("NETRC") or (os.path.join(environ["HOME"], ".netrc")
                                    if environ.get("HOME") else None)
    if not path or not os.path.isfile(path):
        return None, None
    try:
        found = netrc.netrc(path).authenticators(host)
    except (netrc.NetrcParseError, OSError, UnicodeDecodeError) as exc:
        report.warn(f"warning: {path} cannot be read ({type(exc).__name__}); "
                    f"no credentials taken from it for {host}")
        return None, None
    if not found or (username is not None and found[0] and found[0] != username):
        return None, None
    return found[0] or None, found[2] or None


def _from_keyring(host: str, username: str) -> str | None:
    try:
        import keyring  # type: ignore[import-not-found, unused-ignore]  # noqa: PLC0415
    except ImportError:
        return None
    try:
        secret = keyring.get_password(host, username)
    except Exception as exc:  # any backend's failure: anonymous, and said
        report.warn(f"warning: keyring could not be asked for {username}@{host} "
                    f"({type(exc).__name__})")
        return None
    return secret if isinstance(secret, str) else None


def credentials(url: str, environ: Mapping[str, str]) -> Index:
    """The index at ``url`` and who wheelcuda is there: the URL's ``user:password``,
    else WHEELCUDA_INDEX_USERNAME/PASSWORD, else netrc's entry for the host, else keyring
    (when a username is known and keyring is installed), else anonymous."""
    found = _found(url, environ)
    plain = found.url
    if (found.username or found.password) and redact.plain_http(plain):
        # Basic auth is the password in base64: not sent across the network in clear, as
        # NVIDIA's archives are not read over plain http
        report.warn(f"warning: not sending credentials to {redact.url(plain)} over plain http "
                    "(they would cross the network readable): asking without them; give "
                    "an https:// URL, or serve the index on this machine (127.0.0.1)")
        return Index(plain)
    return found


def _found(url: str, environ: Mapping[str, str]) -> Index:
    split = urllib.parse.urlsplit(url)
    host = split.hostname or ""
    username = urllib.parse.unquote(split.username) if split.username is not None else None
    password = urllib.parse.unquote(split.password) if split.password is not None else None
    plain = redact.without_userinfo(url)  # a ?private_token= is the index's own
    if password is not None:
        return Index(plain, username, password)
    env_user, env_password = environ.get(USERNAME_VAR) or None, environ.get(PASSWORD_VAR)
    if env_password and (username is None or env_user in (None, username)):
        return Index(plain, username or env_user, env_password)
    username = username or env_user
    login, secret = _from_netrc(host, environ, username) if host else (None, None)
    if secret is not None:
        return Index(plain, username or login, secret)
    username = username or login
    if username and host:
        secret = _from_keyring(host, username)
    return Index(plain, username, secret)
