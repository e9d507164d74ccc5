"""A team's index of built wheels, against a real pypiserver on 127.0.0.1 with authentication
on, and a tiny server of pages for what pypiserver never does wrong: a labelled wheel
uploaded, found, downloaded and checked; refusals, duplicates, a wrong sha256, a server
that is down or dies mid-download."""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.pypi_server import (
    PASSWORD,
    USER,
    Page,
    Server,
    free_port,
    pages,
    pypiserver,
    sha256,
    tiny_wheel,
)
from wheelcuda._probe.index import IndexFile
from wheelcuda._team import probe_credentials as credentials
from wheelcuda._team import rules as sharing
from wheelcuda._team import rules_key as sharekey
from wheelcuda._team import store as share
from wheelcuda._team import store_wheelfile as wheelfile

FIELDS: dict[str, Any] = {
    "packages": ["sha256:abc"], "torch": "2.9.1+cu128", "torch_cuda": "12.8",
    "compiler": "12.8.93", "archs": "9.0", "prune": True, "python": "cp311",
    "cxx11_abi": True, "variables": {}, "installer_args": [], "machine": "x86_64",
    "host_compiler": "gcc 12.2.0"}
LABEL = sharekey.local_label(sharekey.share_id(FIELDS))
TEAM = {sharing.USERNAME_VAR: USER, sharing.PASSWORD_VAR: PASSWORD}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with pypiserver(tmp_path_factory.mktemp("index")) as running:
        yield running


def labelled(tmp_path: Path, version: str = "1.0.0", fields: dict[str, Any] = FIELDS,
             tag: str = "cp311-cp311-linux_x86_64", name: str = "demo_pkg") -> Path:
    built = tiny_wheel(tmp_path / "built", name=name, version=version, tag=tag)
    return wheelfile.labelled(built, tmp_path / "labelled", fields)


def test_upload_find_download(server: Server, tmp_path: Path) -> None:
    wheel = labelled(tmp_path, name="round_trip")
    index = credentials.credentials(server.simple, TEAM)
    assert share.upload(index, wheel) == "uploaded"
    assert (server.packages / wheel.name).is_file()
    [found] = share.find(index, "round-trip", "1.0.0", LABEL, "cp311")
    assert found.filename == wheel.name
    assert found.sha256 == sha256(wheel)
    got = share.download(found, index, tmp_path / "got")
    assert got == tmp_path / "got" / wheel.name and sha256(got) == sha256(wheel)
    assert [p.name for p in got.parent.iterdir()] == [wheel.name]
    key = wheelfile.read_key(got)
    assert key is not None and sharekey.matches(key, FIELDS)
    # another label, another Python, another version, another project: not found
    assert share.find(index, "round-trip", "1.0.0", "wc000000000000", "cp311") == []
    assert share.find(index, "round-trip", "1.0.0", LABEL, "cp312") == []
    assert share.find(index, "round-trip", "1.0.1", LABEL, "cp311") == []
    assert share.find(index, "not-there", "1.0.0", LABEL, "cp311") == []


def test_a_second_upload_of_the_same_file_exists(server: Server, tmp_path: Path) -> None:
    wheel = labelled(tmp_path, name="twice")
    index = credentials.credentials(server.url, TEAM)  # the root: where pypiserver uploads
    assert share.upload(index, wheel) == "uploaded"
    assert share.upload(index, wheel) == "exists"


def test_credentials_in_the_url(server: Server, tmp_path: Path) -> None:
    wheel = labelled(tmp_path, name="in_url")
    url = server.simple.replace("http://", f"http://{USER}:{PASSWORD}@")
    index = credentials.credentials(url, {})
    assert index.url == server.simple and PASSWORD not in repr(index)
    assert share.upload(index, wheel) == "uploaded"
    assert share.find(index, "in-url", "1.0.0", LABEL, "cp311")


@pytest.mark.parametrize(("environ", "status"), [
    ({sharing.USERNAME_VAR: USER, sharing.PASSWORD_VAR: "wrong-secret"}, 403),
    ({}, 401)])
def test_refused(server: Server, tmp_path: Path, environ: dict[str, str],
                 status: int) -> None:
    wheel = labelled(tmp_path, name="refused")
    index = credentials.credentials(server.simple, {**environ, "HOME": str(tmp_path)})
    with pytest.raises(share.ShareError) as upload:
        share.upload(index, wheel)
    with pytest.raises(share.ShareError) as find:
        share.find(index, "refused", "1.0.0", LABEL, "cp311")
    for exc in (upload.value, find.value):
        assert f"HTTP {status}" in str(exc)
        assert exc.fix is not None and sharing.USERNAME_VAR in exc.fix
        assert "wrong-secret" not in str(exc)
    assert not (server.packages / wheel.name).exists()


def test_auth_for_uploads_only(tmp_path: Path) -> None:
    wheel = labelled(tmp_path, name="open_read")
    with pypiserver(tmp_path / "index", authenticate="update") as open_read:
        with pytest.raises(share.ShareError, match="HTTP 401"):
            share.upload(credentials.credentials(open_read.url, {}), wheel)
        assert share.upload(credentials.credentials(open_read.url, TEAM), wheel) == "uploaded"
        anonymous = credentials.credentials(open_read.simple, {})
        [found] = share.find(anonymous, "open-read", "1.0.0", LABEL, "cp311")
        assert sha256(share.download(found, anonymous, tmp_path / "got")) == sha256(wheel)


def test_a_server_that_is_down(tmp_path: Path) -> None:
    wheel = labelled(tmp_path)
    index = credentials.credentials(f"http://127.0.0.1:{free_port()}/simple/", TEAM)
    with pytest.raises(share.ShareError, match="could not connect") as find:
        share.find(index, "demo-pkg", "1.0.0", LABEL, "cp311")
    with pytest.raises(share.ShareError, match="could not connect") as upload:
        share.upload(index, wheel)
    f = IndexFile(wheel.name, index.url + f"demo-pkg/{wheel.name}", "0" * 64)
    with pytest.raises(share.ShareError, match="could not connect"):
        share.download(f, index, tmp_path / "got")
    assert list((tmp_path / "got").iterdir()) == []
    assert PASSWORD not in str(find.value) + str(upload.value)


def served(wheel: Path, sha: str | None, **page: Any) -> dict[str, Page]:
    link = f"/files/{wheel.name}" + (f"#sha256={sha}" if sha else "")
    html = f'<html><body><a href="{link}">{wheel.name}</a></body></html>'.encode()
    return {"/simple/demo-pkg/": Page(html),
            f"/files/{wheel.name}": Page(wheel.read_bytes(), "application/zip", **page)}


def test_a_wrong_sha256_is_refused(tmp_path: Path) -> None:
    wheel = labelled(tmp_path)
    with pages(served(wheel, "ab" * 32)) as site:
        index = credentials.credentials(site.url + "/simple/", {})
        [found] = share.find(index, "demo-pkg", "1.0.0", LABEL, "cp311")
        assert found.sha256 == "ab" * 32
        with pytest.raises(share.ShareError, match="does not match the index's sha256"):
            share.download(found, index, tmp_path / "got")
    assert list((tmp_path / "got").iterdir()) == []


def test_no_sha256_is_refused(tmp_path: Path) -> None:
    wheel = labelled(tmp_path)
    with pages(served(wheel, None)) as site:
        index = credentials.credentials(site.url + "/simple/", {})
        [found] = share.find(index, "demo-pkg", "1.0.0", LABEL, "cp311")
        with pytest.raises(share.ShareError, match="gives no sha256"):
            share.download(found, index, tmp_path / "got")
    assert not (tmp_path / "got" / wheel.name).exists()


def test_a_server_that_dies_mid_download(tmp_path: Path) -> None:
    wheel = labelled(tmp_path)
    size = wheel.stat().st_size
    with pages(served(wheel, sha256(wheel), cut=size // 2)) as site:
        index = credentials.credentials(site.url + "/simple/", {})
        [found] = share.find(index, "demo-pkg", "1.0.0", LABEL, "cp311")
        with pytest.raises(share.ShareError, match=f"stopped at {size // 2} of {size} bytes"):
            share.download(found, index, tmp_path / "got")
    assert list((tmp_path / "got").iterdir()) == []


def test_pep_691_json_and_credentials_stay_home(tmp_path: Path) -> None:
    wheel = labelled(tmp_path)
    py3 = labelled(tmp_path / "py3", tag="py3-none-any")
    with pages() as site, pages() as elsewhere:
        listing = {"meta": {"api-version": "1.0"}, "name": "demo-pkg", "files": [
            {"filename": py3.name, "url": f"/files/{py3.name}",
             "hashes": {"sha256": sha256(py3)}},
            {"filename": wheel.name, "url": f"{elsewhere.url}/files/{wheel.name}",
             "hashes": {"sha256": sha256(wheel)}},
            {"filename": "demo_pkg-1.0.0.tar.gz", "url": "/files/x.tar.gz", "hashes": {}}]}
        site.routes["/simple/demo-pkg/"] = Page(json.dumps(listing).encode(),
                                                "application/vnd.pypi.simple.v1+json")
        site.routes[f"/files/{py3.name}"] = Page(py3.read_bytes())
        elsewhere.routes[f"/files/{wheel.name}"] = Page(wheel.read_bytes())
        index = credentials.credentials(site.url + "/simple/", TEAM)
        found = share.find(index, "demo-pkg", "1.0.0", LABEL, "cp311")[0]
        assert found.filename == wheel.name  # cp311 before py3
        share.download(found, index, tmp_path / "got")
        assert elsewhere.seen == [(f"/files/{wheel.name}", None)]  # no credentials there
        assert all(auth is not None for _, auth in site.seen)
        found = share.find(index, "demo-pkg", "1.0.0", LABEL, "cp312")[0]
        assert found.filename == py3.name
        share.download(found, index, tmp_path / "got")
    assert sorted(p.name for p in (tmp_path / "got").iterdir()) == sorted([wheel.name,
                                                                           py3.name])


def test_a_redirect_to_another_host_carries_no_credentials(tmp_path: Path) -> None:
    wheel = labelled(tmp_path)
    with pages(served(wheel, sha256(wheel))) as elsewhere, pages() as site:
        site.routes["/simple/demo-pkg/"] = Page(b"", status=302,
                                                location=f"{elsewhere.url}/simple/demo-pkg/")
        index = credentials.credentials(site.url + "/simple/", TEAM)
        found = share.find(index, "demo-pkg", "1.0.0", LABEL, "cp311")[0]
        assert found.url.startswith(elsewhere.url)
        assert site.seen[0][1] is not None
        assert elsewhere.seen == [("/simple/demo-pkg/", None)]


def test_a_label_after_a_local_version(tmp_path: Path) -> None:
    wheel = labelled(tmp_path, version="1.0.0+cu128")
    with pages(served(wheel, sha256(wheel))) as site:
        index = credentials.credentials(site.url + "/simple/", {})
        for version in ("1.0.0+cu128", "1.0.0"):
            found = share.find(index, "demo-pkg", version, LABEL, "cp311")[0]
            assert found.filename == wheel.name
        assert share.find(index, "demo-pkg", "1.0.0+cu126", LABEL, "cp311") == []


def test_upload_url() -> None:
    assert share.upload_url("http://h:1/simple/") == "http://h:1/"
    assert share.upload_url("http://h:1/simple") == "http://h:1/"
    assert share.upload_url("https://h/root/dev/+simple/") == "https://h/root/dev/"
    assert share.upload_url("https://h/repository/team/") == "https://h/repository/team/"


# -- credentials --------------------------------------------------------------------------

def test_credentials_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "keyring", None)  # not installed
    home = {"HOME": str(tmp_path)}
    url = "https://idx.example.com/simple/"
    assert credentials.credentials(url, home) == credentials.Index(url)
    index = credentials.credentials("https://a%40b:p%3Ass@idx.example.com/simple/", home)
    assert (index.url, index.username, index.password) == (url, "a@b", "p:ss")
    from_env = credentials.credentials(url, {**home, **TEAM})
    assert (from_env.username, from_env.password) == (USER, PASSWORD)
    (tmp_path / ".netrc").write_text(
        "machine idx.example.com login net-user password net-secret\n")
    from_netrc = credentials.credentials(url, home)
    assert (from_netrc.username, from_netrc.password) == ("net-user", "net-secret")
    assert credentials.credentials(url, {**home, **TEAM}).password == PASSWORD  # env first
    other = credentials.credentials("https://other.example.com/simple/", home)
    assert (other.username, other.password) == (None, None)
    named = credentials.credentials("https://someone@idx.example.com/simple/", home)
    assert (named.username, named.password) == ("someone", None)  # not net-user's


def test_keyring_when_a_username_is_known(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, str]] = []

    def get_password(host: str, user: str) -> str:
        asked.append((host, user))
        return "from-keyring"

    monkeypatch.setitem(sys.modules, "keyring", types.SimpleNamespace(
        get_password=get_password))
    home = {"HOME": str(tmp_path)}
    anonymous = credentials.credentials("https://idx.example.com/simple/", home)
    assert anonymous.password is None and asked == []
    index = credentials.credentials("https://me@idx.example.com/simple/", home)
    assert (index.username, index.password) == ("me", "from-keyring")
    assert asked == [("idx.example.com", "me")]


def test_the_password_is_never_shown() -> None:
    index = credentials.Index("https://idx.example.com/simple/", "me", "hunter2")
    assert "hunter2" not in repr(index) and "hunter2" not in str(index)
    assert "***" in repr(index)


def _renamed_inside(wheel: Path, into: Path, name: str) -> Path:
    """The same file name, METADATA saying ``Name: name`` (RECORD left as it was)."""
    import zipfile  # noqa: PLC0415

    into.mkdir(parents=True, exist_ok=True)
    out = into / wheel.name
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename.endswith(".dist-info/METADATA"):
                data = data.replace(b"Name: demo-pkg", f"Name: {name}".encode(), 1)
            dst.writestr(item, data)
    return out


def test_metadata_must_name_the_file_s_project(tmp_path: Path) -> None:
    """A correctly keyed wheel whose METADATA says `Name: evil-pkg` is refused, when taken
    and when relabelled (the label would carry it under demo-pkg's name)."""
    good = labelled(tmp_path)
    evil = _renamed_inside(good, tmp_path / "evil", "evil-pkg")
    wheelfile.check_metadata(good)
    with pytest.raises(wheelfile.WheelFileError, match="METADATA says evil-pkg"):
        wheelfile.check_metadata(evil)
    with pytest.raises(wheelfile.WheelFileError, match="METADATA says evil-pkg"):
        wheelfile.labelled(evil, tmp_path / "again", FIELDS)
    other = _renamed_inside(tiny_wheel(tmp_path / "v", version="2.0.0"), tmp_path / "v2",
                            "demo-pkg")
    (tmp_path / "v3").mkdir()
    moved = (tmp_path / "v3" / other.name.replace("2.0.0", "1.0.0"))
    other.rename(moved)
    with pytest.raises(wheelfile.WheelFileError, match=r"its file name demo-pkg 1\.0\.0"):
        wheelfile.check_metadata(moved)


def test_each_hit_is_tried_until_one_serves(tmp_path: Path) -> None:
    """Two wheels under this key's label: the preferred one (cp311) says another project
    inside, the py3 one is right. The right one is taken; the wrong one is said, and
    removed."""
    from wheelcuda._team import store_index as teamindex  # noqa: PLC0415

    evil = _renamed_inside(labelled(tmp_path / "a"), tmp_path / "evil", "evil-pkg")
    right = labelled(tmp_path / "b", tag="py3-none-any")
    links = "".join(f'<a href="/files/{w.name}#sha256={sha256(w)}">{w.name}</a>'
                    for w in (evil, right))
    routes = {"/simple/demo-pkg/": Page(links.encode()),
              **{f"/files/{w.name}": Page(w.read_bytes(), "application/zip")
                 for w in (evil, right)}}
    with pages(routes) as site:
        index = credentials.credentials(site.url + "/simple/", {})
        got = teamindex.take(index, "demo-pkg", FIELDS, "cp311", tmp_path / "got")
    assert got is not None and got.name == right.name
    assert [p.name for p in (tmp_path / "got").iterdir()] == [right.name]


@pytest.mark.parametrize("kind", ["application/vnd.pypi.simple.v1+json", "text/html"])
def test_a_page_from_the_network_never_points_at_this_machine(tmp_path: Path,
                                                               kind: str) -> None:
    """PEP 691 and PEP 503 alike: a file:// (or any non-http) link on a remote page is
    dropped, as if it were not there; an http one stays."""
    from wheelcuda._probe import index as index_probe  # noqa: PLC0415

    names = ["demo_pkg-1.0.0-py3-none-any.whl", "demo_pkg-1.0.1-py3-none-any.whl",
             "demo_pkg-1.0.2-py3-none-any.whl"]
    urls = [f"file://{tmp_path}/x.whl", "ftp://elsewhere/y.whl", "/files/z.whl"]
    pairs = list(zip(names, urls, strict=True))
    if "json" in kind:
        listing = [{"filename": n, "url": u, "hashes": {}} for n, u in pairs]
        body = json.dumps({"meta": {"api-version": "1.0"}, "name": "demo-pkg",
                           "files": listing}).encode()
    else:
        body = "".join(f'<a href="{u}">{n}</a>' for n, u in pairs).encode()
    with pages({"/simple/demo-pkg/": Page(body, kind)}) as site:
        found = index_probe.files(site.url + "/simple/", "demo-pkg")
    assert [(f.filename, f.url) for f in found] == [(names[2], site.url + "/files/z.whl")]


def test_a_wheel_renamed_to_carry_its_label_passes(tmp_path: Path) -> None:
    """flash-attn's release workflow renames the wheel after the build: METADATA says
    2.8.3, the file 2.8.3+cu12torch2.8cxx11abiTRUE (uv takes it). The public versions
    agree: it passes; another public version does not."""
    built = tiny_wheel(tmp_path / "w", "flash_attn", "2.8.3", "cp311-cp311-linux_x86_64")
    renamed = built.with_name("flash_attn-2.8.3+cu12torch2.8cxx11abiTRUE-cp311-cp311-"
                              "linux_x86_64.whl")
    built.rename(renamed)
    wheelfile.check_metadata(renamed)
    other = renamed.with_name(renamed.name.replace("2.8.3+", "2.8.4+"))
    renamed.rename(other)
    with pytest.raises(wheelfile.WheelFileError, match=r"METADATA says flash-attn 2\.8\.3"):
        wheelfile.check_metadata(other)
