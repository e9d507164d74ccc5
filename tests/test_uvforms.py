"""What uv-config reads of uv's world: package names, an index on 127.0.0.1 (PEP 691
JSON and PEP 503 HTML), uv's order of indexes, a project's local folders, and the torch
entry and index it writes."""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
import tomlkit

from tests import fakes
from wheelcuda._context import Context
from wheelcuda._probe import index, uvforms
from wheelcuda._rules import uvconfig, uvtorch
from wheelcuda.errors import ConfigError

STATIC = b'[project]\nname = "ext"\nversion = "1.0"\ndependencies = ["torch>=2"]\n'


def test_the_torch_entry_is_the_exact_version_wherever_one_is_known() -> None:
    """uv takes ``torch==X`` for any package; match-runtime only for static metadata that
    requires torch, and not when torch is outside the resolution (torchsort failed so with
    --no-deps): it is written only when torch's version is not known (--cuda)."""
    entry, why = uvtorch.torch_entry("2.11.0+cu128")
    assert entry == "torch==2.11.0+cu128" and "any package" in why
    entry, why = uvtorch.torch_entry(None)
    assert entry == uvtorch.match_runtime() and "--cuda" in why and "uv lock" in why


def test_names_of_what_uv_config_covers(tmp_path: Path) -> None:
    (tmp_path / "ext").mkdir()
    (tmp_path / "ext" / "pyproject.toml").write_bytes(STATIC)
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    ctx = Context.of({"HOME": str(tmp_path)}, cwd=str(tmp_path))
    assert [p.name for p in uvforms.read(["Causal_Conv1d==1.7.0", "ext"], ctx)] == [
        "causal-conv1d", "ext"]
    with pytest.raises(ConfigError, match="no static \\[project\\] name"):
        uvforms.read(["old"], ctx)
    with pytest.raises(ConfigError, match="neither a package name"):
        uvforms.read(["not a name!"], ctx)


def test_torch_index() -> None:
    assert uvtorch.torch_index("2.11.0+cu128", None) == "https://download.pytorch.org/whl/cu128"
    assert uvtorch.torch_index("2.14.1", None) is None
    assert uvtorch.torch_index("2.14.1", "https://pypi.org/simple") is None
    assert uvtorch.torch_index("2.11.0+cu128", "https://mirror.example/cu128/") == \
        "https://mirror.example/cu128"


def test_index_entry_merged_once_and_removed() -> None:
    doc = tomlkit.document()
    s = uvconfig.Settings("ext", "torch==2.11.0+cu128", {"CUDA_HOME": "/h"})
    url = "https://download.pytorch.org/whl/cu128"
    uvconfig.merge(doc, [s], pyproject=False, index=url)
    uvconfig.merge(doc, [s], pyproject=False, index=url)
    data = doc.unwrap()
    assert data["index"] == [{"name": uvtorch.INDEX_NAME, "url": url}]
    assert uvconfig.remove(doc, pyproject=False) == ["ext"]
    assert doc.unwrap() == {}
    # the user's own entry for that index serves; an explicit one in a uv.toml is said
    mine = tomlkit.parse(f'[[index]]\nname = "pt"\nurl = "{url}"\nexplicit = true\n')
    conflicts = uvconfig.merge(mine, [s], pyproject=False, index=url)
    assert "explicit" in conflicts[0] and len(mine.unwrap()["index"]) == 1


class _Index(http.server.BaseHTTPRequestHandler):
    files: ClassVar[dict[str, bytes]] = {}
    json_api = True
    auth: ClassVar[str | None] = None  # the Authorization header the index wants

    def do_GET(self) -> None:
        if self.auth and self.headers.get("Authorization") != self.auth:
            self.send_error(401)
            return
        if self.path == "/hostile/ext/":
            body = (b'<a href="file:///etc/passwd">ext-1.0.tar.gz</a>'
                    b'<a href="/f/cut.tar.gz">ext-0.9.tar.gz</a>')
            kind = "text/html"
        elif self.path == "/f/cut.tar.gz":
            whole = self.files["/f/ext-1.0.tar.gz"]
            body, kind = whole[: len(whole) // 3], "application/octet-stream"
        elif self.path in self.files:
            body, kind = self.files[self.path], "application/octet-stream"
        elif self.path == "/simple/ext/":
            sha = hashlib.sha256(self.files["/f/ext-1.0.tar.gz"]).hexdigest()
            if self.json_api and "json" in (self.headers.get("Accept") or ""):
                body = json.dumps({"files": [
                    {"filename": "ext-0.9.tar.gz", "url": "/f/ext-0.9.tar.gz", "hashes": {}},
                    {"filename": "ext-1.0.tar.gz", "url": "../../f/ext-1.0.tar.gz",
                     "hashes": {"sha256": sha}},
                    {"filename": "ext-2.0rc1.tar.gz", "url": "/f/x", "hashes": {}}]}).encode()
                kind = "application/vnd.pypi.simple.v1+json"
            else:
                body = (f'<a href="../../f/ext-1.0.tar.gz#sha256={sha}">ext-1.0.tar.gz</a>'
                        '<a href="/f/ext-0.9.tar.gz">ext-0.9.tar.gz</a>').encode()
                kind = "text/html"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    sd = fakes.sdist(tmp_path, "ext", "1.0", metadata_version="2.2", requires=["torch"])
    _Index.files = {"/f/ext-1.0.tar.gz": sd.read_bytes()}
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/simple"
    _Index.auth = None
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("json_api", [True, False], ids=["pep691", "pep503"])
def test_index_read_on_loopback(server: str, json_api: bool) -> None:
    _Index.json_api = json_api
    found = index.newest_sdist(index.files(server, "EXT"), "ext")
    assert found is not None and found.filename == "ext-1.0.tar.gz" and found.sha256


def test_indexes_in_uvs_order(tmp_path: Path) -> None:
    (tmp_path / "uv.toml").write_text('[[index]]\nurl = "https://a/simple"\n'
                                      '[[index]]\nurl = "https://b/simple"\nexplicit = true\n')
    ctx = Context.of({"UV_INDEX": "x=https://u/simple", "UV_EXTRA_INDEX_URL": "https://e/s",
                      "UV_FIND_LINKS": "/w1,/w2"}, cwd=str(tmp_path))
    assert [(p.url, p.flat) for p in uvforms.indexes(ctx)] == [
        ("https://u/simple", False), ("https://e/s", False), ("https://a/simple", False),
        (index.PYPI, False), ("/w1", True), ("/w2", True)]
    # a default index replaces PyPI; offline, only what is on this machine is read
    (tmp_path / "uv.toml").write_text('[[index]]\nurl = "https://mirror/simple"\n'
                                      'default = true\n')
    offline = ctx.with_env(UV_OFFLINE="1", UV_INDEX="file:///srv/simple")
    assert [p.url for p in uvforms.indexes(ctx)][-3:] == ["https://mirror/simple", "/w1",
                                                          "/w2"]
    assert [p.url for p in uvforms.indexes(offline)] == ["file:///srv/simple", "/w1", "/w2"]


def test_the_order_is_the_real_uvs(tmp_path: Path) -> None:
    """Four local indexes, each with its own release of one package, named by UV_INDEX,
    UV_EXTRA_INDEX_URL, a uv.toml's [[index]] and its extra-index-url: the real uv takes
    the package from the first index that has it (its default strategy), so the release
    it resolves says which index came first. wheelcuda's order must say the same (the
    sdist a key is made from must be the one uv installs), dropping one index at a time."""
    urls = {}
    for name, version in (("env-index", "4.0"), ("env-extra", "3.0"), ("file-index", "2.0"),
                          ("file-extra", "1.0")):
        folder = tmp_path / name
        whl = fakes.wheel(folder / "files", "order-probe", version, {"order_probe.py": ""})
        (folder / "simple/order-probe").mkdir(parents=True)
        (folder / "simple/order-probe/index.html").write_text(
            f'<a href="../../files/{whl.name}">{whl.name}</a>\n')
        urls[name] = (folder / "simple").as_uri()
    (tmp_path / "empty").mkdir()
    (tmp_path / "req.in").write_text("order-probe\n")
    uv = str(Path(sys.executable).parent / "uv")
    names = list(urls)
    for first in range(len(names)):
        kept = names[first:]
        (tmp_path / "uv.toml").write_text(
            (f'[[index]]\nurl = "{urls["file-index"]}"\n' if "file-index" in kept else "")
            + (f'extra-index-url = ["{urls["file-extra"]}"]\n' if "file-extra" in kept else ""))
        env = {"UV_DEFAULT_INDEX": (tmp_path / "empty").as_uri(),
               **({"UV_INDEX": urls["env-index"]} if "env-index" in kept else {}),
               **({"UV_EXTRA_INDEX_URL": urls["env-extra"]} if "env-extra" in kept else {})}
        done = subprocess.run([uv, "pip", "compile", "-q", "--no-header", "--no-config",
                               "--config-file", str(tmp_path / "uv.toml"), "req.in",
                               "--python-version", "3.11"], cwd=tmp_path, text=True,
                              capture_output=True, check=True,
                              env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                                   "UV_CACHE_DIR": str(tmp_path / "uv-cache"), **env})
        ctx = Context.of({**env, "UV_CONFIG_FILE": str(tmp_path / "uv.toml")},
                         cwd=str(tmp_path))
        ours = next(p.url for p in uvforms.indexes(ctx) if p.url in urls.values())
        release = dict(zip(names, ("4.0", "3.0", "2.0", "1.0"), strict=True))[kept[0]]
        assert done.stdout.split()[0] == f"order-probe=={release}", done.stderr
        assert ours == urls[kept[0]], (kept, done.stdout)


def test_project_folders_are_covered(tmp_path: Path) -> None:
    (tmp_path / "ext").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "p"\nversion = "0"\n[tool.uv.sources]\n'
        'ext = { path = "ext" }\nother = { index = "pt" }\ngone = { path = "gone" }\n')
    assert uvforms.project_folders(Context.of({}, cwd=str(tmp_path))) == ["ext"]


def test_doctor_names_local_folders_uv_config_does_not_cover(tmp_path: Path) -> None:
    """`uv add ./ext` after `uv-config` without names: the project builds ext without
    CUDA_HOME, and doctor says which folder to name."""
    (tmp_path / "ext").mkdir()
    (tmp_path / "ext/pyproject.toml").write_text('[project]\nname = "My_Ext"\nversion = "1"\n')
    (tmp_path / "ext/kernel.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "pure").mkdir()  # a pure-Python path dependency needs no settings
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "p"\nversion = "0"\n[tool.uv.sources]\nmy-ext = { path = "ext" }\n')
    (tmp_path / "uv.lock").write_text(
        'version = 1\n[[package]]\nname = "p"\nversion = "0"\nsource = { virtual = "." }\n'
        '[[package]]\nname = "my-ext"\nversion = "1"\nsource = { directory = "ext" }\n'
        '[[package]]\nname = "pure"\nversion = "1"\nsource = { editable = "pure" }\n')
    ctx = Context.of({"HOME": str(tmp_path)}, cwd=str(tmp_path))
    assert uvforms.uncovered(ctx) == [("my-ext", "ext")]
    (tmp_path / "uv.toml").write_text('[extra-build-variables.my_ext]\nWHEELCUDA_SET = "X"\n')
    assert uvforms.uncovered(ctx) == []


def test_credentials_are_sent_never_shown(server: str) -> None:
    """An index URL with credentials (as uv takes them): sent as Basic auth, and no
    message shows them."""
    _Index.json_api = True
    _Index.auth = "Basic " + base64.b64encode(b"alice:s3cret").decode()
    with_auth = server.replace("http://", "http://alice:s3cret@")
    assert index.newest_sdist(index.files(with_auth, "ext"), "ext") is not None
    wrong = with_auth.replace("s3cret", "wrong")
    with pytest.raises(index.IndexUnreadable) as caught:
        index.files(wrong, "ext")
    said = str(caught.value)
    assert "401" in said and "wrong" not in said and "alice" not in said


def test_hostile_pages_are_not_followed(server: str) -> None:
    """A page from the network that points at this machine's files is not followed."""
    hostile = server.replace("/simple", "/hostile")
    found = index.files(hostile, "ext")
    assert [f.filename for f in found] == ["ext-0.9.tar.gz"]


def test_a_pinned_requirement_is_keyed_by_its_sdist(tmp_path: Path) -> None:
    """Before: ``pkg==1.0`` from another index, or another sdist with the
    same name and version, was served from the wheel cache. The key now holds the sdist's
    sha256 on the index uv takes it from (or the indexes searched)."""
    (tmp_path / "empty").mkdir()
    nothing = {"UV_DEFAULT_INDEX": (tmp_path / "empty").as_uri()}  # no PyPI
    seen = []
    for n in ("a", "b"):
        links = tmp_path / n
        links.mkdir()
        (links / "demo_ext-1.0.tar.gz").write_bytes(f"an sdist from {n}".encode())
        ctx = Context.of({**nothing, "UV_FIND_LINKS": str(links)}, str(tmp_path))
        seen.append(uvforms.pinned_source("demo-ext==1.0", ctx))
    assert seen[0] != seen[1] and all(s and s.startswith("sha256:") for s in seen)
    ctx = Context.of({**nothing, "UV_FIND_LINKS": str(tmp_path / "a")}, str(tmp_path))
    assert uvforms.pinned_source("demo-ext==1.0", ctx) == seen[0]  # stable
    assert uvforms.pinned_source("demo-ext", ctx) is None  # not exact: not kept anyway
    assert uvforms.pinned_source("./folder", ctx) is None
    nowhere = Context.of({**nothing, "UV_FIND_LINKS": str(tmp_path / "none"),
                          "UV_INDEX": "https://user:s3cret@idx.invalid/simple"}, str(tmp_path))
    found = uvforms.pinned_source("demo-ext==1.0", nowhere)
    assert found is not None and found.startswith("indexes:") and "s3cret" not in found
