"""One redactor (_rules/redact.py) for what wheelcuda prints, writes and sends: userinfo
and token-like query values never leave this machine; a request keeps them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_cli import run
from tests.test_team import Machines
from wheelcuda._probe import index, web
from wheelcuda._rules import buildkey, redact
from wheelcuda._team import probe_credentials as credentials
from wheelcuda._team import rules as sharing
from wheelcuda._team import rules_key as sharekey
from wheelcuda.errors import ConfigError


@pytest.mark.parametrize(("given", "shown"), [
    ("https://alice:TOKEN@host/simple/", "https://host/simple/"),
    ("https://alice@host:8443/simple/", "https://host:8443/simple/"),
    ("https://host/api/v4/projects/1/packages/pypi/simple?private_token=TOKEN",
     "https://host/api/v4/projects/1/packages/pypi/simple?private_token=***"),
    ("https://b.s3.amazonaws.com/w.whl?X-Amz-Credential=AK&X-Amz-Signature=SIG&x-id=Get",
     "https://b.s3.amazonaws.com/w.whl?X-Amz-Credential=***&X-Amz-Signature=***&x-id=Get"),
    ("https://a.blob.core.windows.net/c/w.whl?sv=2022&sig=SIG", "https://a.blob.core.windows.net/c/w.whl?sv=2022&sig=***"),
    ("http://u:p@[::1]:8080/simple/", "http://[::1]:8080/simple/"),
    ("http://[fe80::1]/simple/?api_key=K", "http://[fe80::1]/simple/?api_key=***"),
    ("https://team:pa/ss@word@host/simple", "https://host/simple"),  # "/" and "@" in it
    ("https://team:s3/cret@host:x/simple", "https://host:x"),  # no parse: scheme and host
    ("https://host/simple/?page=2", "https://host/simple/?page=2"),
    # a password with "/" that starts with digits parses as a port: user:12 is no host
    ("https://user:12/x@host/simple", "https://host/simple"),
    ("https://host/pkg@1.0/simple/", "https://host/pkg@1.0/simple/"),  # "@" in a path
    ("https://tok@host/pkg@1.0/simple/", "https://host/pkg@1.0/simple/"),  # and userinfo
    # an ssh URL keeps its user name, not a token in its query
    ("git+ssh://git@host/r.git?token=S", "git+ssh://git@host/r.git?token=***"),
    ("git+ssh://git@host/r.git", "git+ssh://git@host/r.git"),
    ("./relative/folder", "./relative/folder"),
])
def test_what_a_url_shows(given: str, shown: str) -> None:
    assert redact.url(given) == shown
    assert index.shown(given) == shown


def test_free_text_and_arguments() -> None:
    said = redact.text("--extra-index-url=https://alice:TOKEN@host/simple/ and "
                       "'git+https://bob:GHTOKEN@github.com/x/y.git'")
    assert "TOKEN" not in said and "https://host/simple/" in said
    assert "git+https://github.com/x/y.git" in said
    assert redact.args(["-v", "https://h/s?token=T"]) == ["-v", "https://h/s?token=***"]
    # an ssh URL's user names an account: a printed command stays one that works
    ssh = "git+ssh://git@github.com/org/repo.git@v1"
    assert redact.text(ssh) == ssh
    assert redact.text("git+https://TOKEN@github.com/x.git") == "git+https://github.com/x.git"
    # prose around a URL keeps its punctuation
    assert redact.text("(see https://h/s?token=T).") == "(see https://h/s?token=***)."


def test_a_request_keeps_the_query_and_the_brackets() -> None:
    """What is sent: the userinfo goes to a header, the rest as written (an IPv6 host lost
    its brackets once, and an index's ?private_token= is the index's own business)."""
    assert redact.without_userinfo("http://u:p@[::1]:8080/s/?private_token=T") == \
        "http://[::1]:8080/s/?private_token=T"
    req = web.request("http://u:p@[::1]:8080/simple/x/")
    assert req.full_url == "http://[::1]:8080/simple/x/"
    assert req.get_header("Authorization", "").startswith("Basic ")


@pytest.mark.parametrize(("given", "sent"), [
    # userinfo and an "@" in the path: the request goes to the host, not to "1.0"
    ("https://tok@host/pkg@1.0/simple/", "https://host/pkg@1.0/simple/"),
    ("https://u:p@host:8443/r.git@v1", "https://host:8443/r.git@v1"),
    # a password holding "/" is no userinfo to urllib, pip or uv: sent as they send it
    ("https://user:12/x@host/simple", "https://user:12/x@host/simple"),
])
def test_a_request_goes_where_urllib_says(given: str, sent: str) -> None:
    """The URL a request is sent to and the credentials in its header are read alike
    (urllib's userinfo): a userinfo found by another rule sent the request elsewhere."""
    assert redact.without_userinfo(given) == sent
    assert web.request(given).full_url == sent


def test_an_index_page_keeps_the_query(tmp_path: Path) -> None:
    """The project goes into the path of `.../simple?private_token=T`, the token stays in
    the query: the page is found."""
    from tests.pypi_server import Page, pages  # noqa: PLC0415

    link = b'<a href="/files/demo_pkg-1.0.tar.gz">demo_pkg-1.0.tar.gz</a>'
    with pages({"/simple/demo-pkg/?private_token=T": Page(link)}) as site:
        found = index.files(site.url + "/simple?private_token=T", "demo-pkg")
        asked = [path for path, _ in site.seen]
    assert [f.filename for f in found] == ["demo_pkg-1.0.tar.gz"]
    assert asked == ["/simple/demo-pkg/?private_token=T"]


def test_an_index_keeps_its_query_token() -> None:
    """GitLab's registry reads ?private_token=: the index wheelcuda asks keeps it (only
    what is shown loses it)."""

    index = credentials.credentials("https://alice:pw@[::1]:8443/simple?private_token=T", {})
    assert index.url == "https://[::1]:8443/simple?private_token=T"
    assert (index.username, index.password) == ("alice", "pw")


def test_the_key_holds_no_token_and_travels_without_one() -> None:
    base = {"torch": "2.14.1", "torch_cuda": "13.0", "compiler": "13.0.88", "archs": "9.0",
            "prune": True, "python": "cp311", "cxx11_abi": True, "variables": {}}
    one = buildkey.BuildKey(packages=["git+https://bob:A@host/x.git"], **base,
                              installer_args=["--extra-index-url",
                                              "https://h/simple?private_token=A"])
    two = buildkey.BuildKey(packages=["git+https://bob:B@host/x.git"], **base,
                              installer_args=["--extra-index-url",
                                              "https://h/simple?private_token=B"])
    assert one == two and one.id == two.id
    travels = json.dumps(sharekey.share_fields({**one.fields(), "installer_args": [
        "https://alice:A@h/simple?private_token=A"]}))
    assert "private_token=***" in travels and "alice" not in travels and ":A@" not in travels


@pytest.mark.parametrize("url", ["https://team:s3/cret@host:x/simple",
                                 "ftp://team:s3cret@host/simple",
                                 "https://team:s3cret@/simple"])
def test_the_index_check_shows_scheme_and_host(url: str) -> None:
    with pytest.raises(ConfigError) as info:
        sharing.choose([url], None, False, {})
    assert "cret" not in str(info.value) and "s3" not in str(info.value), info.value


def test_an_installer_argument_s_token_is_neither_printed_nor_written(tmp_path: Path) -> None:
    """`install ./ext -- --extra-index-url https://alice:TOKEN@host/simple/?private_token=QX7`:
    the installer gets both tokens; stderr, --explain and build.json get neither."""
    m = Machines(tmp_path)
    # a token no timestamp holds ("T2" is in every build.json written from 20:00 to 23:59)
    url = "https://alice:TOKEN@127.0.0.1:1/simple/?private_token=QX7PRIV"
    env = {**m.env, "WHEELCUDA_CACHE_DIR": str(tmp_path / "cache")}
    for explain in (("--explain",), ()):
        m.log.write_text("")
        r = run("install", "--python", str(m.a), "--arch", "9.0", *explain, str(m.ext),
                "--", "--extra-index-url", url, env=env)
        assert r.returncode == 0, r.stderr
        out = r.stdout + r.stderr
        assert "TOKEN" not in out and "QX7PRIV" not in out and "private_token=***" in out, out
    assert url in m.log.read_text()  # the installer was handed the real URL
    [record] = (tmp_path / "cache").glob("**/build.json")
    assert "TOKEN" not in record.read_text() and "QX7PRIV" not in record.read_text()


def test_no_password_over_plain_http_to_another_host(capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    """Basic auth to http://team-index.lan/ would put the password on the network in the
    clear (NVIDIA's archives are never read over plain http either): asked without it,
    and said. This machine's own server (the tests' pypiserver) keeps them."""

    lan = credentials.credentials("http://alice:pw@team-index.lan/simple/", {})
    assert (lan.username, lan.password) == (None, None)
    assert lan.url == "http://team-index.lan/simple/"
    env = {sharing.USERNAME_VAR: "team", sharing.PASSWORD_VAR: "pw"}
    assert credentials.credentials("http://team-index.lan/simple/", env).password is None
    said = capsys.readouterr().err
    assert "not sending credentials to http://team-index.lan/simple/ over plain http" in said
    assert "pw" not in said
    assert credentials.credentials("https://team-index.lan/simple/", env).password == "pw"
    assert credentials.credentials("http://127.0.0.1:8080/simple/", env).password == "pw"
