"""NVIDIA's redistributable archives as a toolkit source (for CUDA 12): the manifest, the
plan and the member checks (pure); the fetch into the store against a 127.0.0.1 mirror
laid out as NVIDIA's, with a fake CUDA 12 release and one made from the real CUDA 13
wheels. Every failure ends in a clear error and a store with nothing half-written."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests import fakes
from tests import redist_server as rs
from wheelcuda._context import Context
from wheelcuda._data import catalog
from wheelcuda._data import settings as registry
from wheelcuda._probe import locate
from wheelcuda._sources.redist import data, rules, source
from wheelcuda._sources.redist import store_archives as archives
from wheelcuda._sources.redist import store_roots as redistroots
from wheelcuda._store import prune, toolkits
from wheelcuda._store.layout import Layout
from wheelcuda._values import Torch
from wheelcuda.errors import ComponentError

NVCC_URL = "cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-12.8.93-archive.tar.xz"
MANIFEST = "redistrib_12.8.1.json"
CTX = Context((), "/", "/usr/bin/python3")  # the protocol's; unused by this source


# -- rules: the manifest ------------------------------------------------------------------

def _doc(**changes: object) -> dict[str, object]:
    entry = {"relative_path": NVCC_URL, "sha256": "a" * 64, "md5": "b" * 32, "size": "79015464"}
    doc: dict[str, object] = {"release_date": "2025-03-06", "release_label": "12.8.1",
                              "release_product": "cuda"}
    for name, version in (("cuda_nvcc", "12.8.93"), ("cuda_cudart", "12.8.90"),
                          ("cuda_cccl", "12.8.90")):
        rel = NVCC_URL.replace("cuda_nvcc", name).replace("12.8.93", version)
        doc[name] = {"name": name, "license": "CUDA Toolkit", "version": version,
                     "linux-x86_64": {**entry, "relative_path": rel},
                     "linux-sbsa": {**entry, "relative_path": rel.replace("x86_64", "sbsa")}}
    doc.update(changes)
    return doc


def test_manifest_is_read_with_size_a_string() -> None:
    m = rules.parse_manifest(json.dumps(_doc()), "m.json")
    assert m.label == "12.8.1" and m.date == "2025-03-06"
    got = m.packages["cuda_nvcc"].downloads["linux-x86_64"]
    assert got == rules.Download(NVCC_URL, "a" * 64, 79015464)


@pytest.mark.parametrize(("text", "why"), [
    ("{not json", "not JSON"),
    ("[1, 2]", "not a JSON object"),
    ('{"release_label": "12.8.1"}', "lists no components"),
    ('{"cuda_nvcc": {"name": "x"}}', "component cuda_nvcc has no version"),
])
def test_malformed_manifest_is_refused(text: str, why: str) -> None:
    with pytest.raises(ComponentError) as err:
        rules.parse_manifest(text, "https://mirror/redistrib_12.8.1.json")
    assert "https://mirror/redistrib_12.8.1.json is malformed" in str(err.value)
    assert why in str(err.value)


def test_a_broken_entry_is_refused_only_when_needed() -> None:
    doc = _doc()
    doc["cuda_nvcc"]["linux-sbsa"]["size"] = 79015464  # type: ignore[index]  # a number
    doc["cuda_cudart"]["linux-x86_64"]["sha256"] = "xyz"  # type: ignore[index]
    m = rules.parse_manifest(json.dumps(doc), "m.json")
    with pytest.raises(ComponentError) as err:
        rules.plan(m, "12.8", "linux-x86_64", data.BASE_URL, "m.json")
    assert "cuda_cudart for linux-x86_64: sha256 'xyz' is not 64 hex digits" in str(err.value)
    with pytest.raises(ComponentError) as err:
        rules.plan(m, "12.8", "linux-sbsa", data.BASE_URL, "m.json")
    assert "size 79015464 is not a number in a string" in str(err.value)


# -- rules: release and plan --------------------------------------------------------------

def test_the_newest_known_patch_is_chosen() -> None:
    assert rules.choose_release("12.8").label == "12.8.1"
    assert rules.choose_release("12.9").manifest_sha256 == (
        "8335301010b0023ee1ff61eb11e2600ca62002d76780de4089011ad77e0c7630")
    assert rules.choose_release("13.0").label == "13.0.2"
    with pytest.raises(ComponentError) as err:
        rules.choose_release("12.7")
    assert "no NVIDIA archive release for CUDA 12.7" in str(err.value)
    assert "12.8.1, 12.9.1" in str(err.value) and "--redist-manifest" in str(err.value)


def test_platforms() -> None:
    assert rules.platform_of("x86_64") == "linux-x86_64"
    assert rules.platform_of("aarch64") == "linux-sbsa"
    with pytest.raises(ComponentError, match="ppc64le"):
        rules.platform_of("ppc64le")


def test_plan_gives_urls_under_the_base_and_folders_of_the_catalog() -> None:
    m = rules.parse_manifest(json.dumps(_doc()), "m.json")
    plan = rules.plan(m, "12.8", "linux-x86_64", "http://mirror/redist", "m.json")
    assert [(a.name, a.version, a.folder, a.dist) for a in plan] == [
        ("cuda_nvcc", "12.8.93", "nvidia/cuda_nvcc", "nvidia-cuda-nvcc-cu12"),
        ("cuda_cudart", "12.8.90", "nvidia/cuda_runtime", "nvidia-cuda-runtime-cu12"),
        ("cuda_cccl", "12.8.90", "nvidia/cuda_cccl", "nvidia-cuda-cccl-cu12")]
    assert plan[0].url == f"http://mirror/redist/{NVCC_URL}"
    assert plan[0].top == "cuda_nvcc-linux-x86_64-12.8.93-archive"
    assert (plan[0].size, plan[0].sha256) == (79015464, "a" * 64)


def test_plan_refuses_another_cuda_a_missing_part_and_odd_paths() -> None:
    m = rules.parse_manifest(json.dumps(_doc()), "m.json")
    with pytest.raises(ComponentError, match=r"cuda_nvcc is 12\.8\.93, torch was built with "
                                             r"CUDA 12\.9"):
        rules.plan(m, "12.9", "linux-x86_64", data.BASE_URL, "m.json")
    doc = _doc()
    del doc["cuda_cccl"]
    with pytest.raises(ComponentError, match="has no cuda_cccl"):
        rules.plan(rules.parse_manifest(json.dumps(doc), "m.json"), "12.8", "linux-x86_64",
                   data.BASE_URL, "m.json")
    doc = _doc()
    doc["cuda_nvcc"]["linux-x86_64"]["relative_path"] = "../../etc/x.tar.xz"  # type: ignore[index]
    with pytest.raises(ComponentError, match="not a plain relative path"):
        rules.plan(rules.parse_manifest(json.dumps(doc), "m.json"), "12.8", "linux-x86_64",
                   data.BASE_URL, "m.json")
    with pytest.raises(ComponentError, match=r"no cuda_nvcc 12\.8\.93 for linux-ppc64le"):
        rules.plan(m, "12.8", "linux-ppc64le", data.BASE_URL, "m.json")


def test_cuda_13_takes_five_archives_into_one_folder() -> None:
    assert [p.name for p in data.PARTS[13]] == ["cuda_nvcc", "cuda_crt", "libnvvm",
                                                "cuda_cudart", "cuda_cccl"]
    assert {p.folder(13) for p in data.PARTS[13]} == {"nvidia/cu13"}
    assert "cccl" in data.PARTS[13][-1].names  # 13.3's name for it


# -- rules: members -----------------------------------------------------------------------

TOP = "cuda_cudart-linux-x86_64-12.8.90-archive"


@pytest.mark.parametrize(("name", "kind", "link", "bad"), [
    (f"{TOP}/lib/libcudart.so.12.8.90", "file", "", None),
    (f"./{TOP}/include/", "dir", "", None),
    (f"{TOP}/lib/libcudart.so", "symlink", "libcudart.so.12", None),
    (f"{TOP}/bin/x", "symlink", "../lib/libcudart.so", None),
    (f"{TOP}/lib/copy", "hardlink", f"{TOP}/lib/libcudart.so.12.8.90", None),
    (f"/{TOP}/lib/x", "file", "", "not a plain relative path"),
    (f"{TOP}/../evil", "file", "", "not a plain relative path"),
    ("other-top/x", "file", "", "outside the archive's folder"),
    (f"{TOP}/dev", "other", "", "device, fifo"),
    (f"{TOP}/lib/x", "symlink", "../../../etc/passwd", "outside the archive's folder"),
    (f"{TOP}/lib/x", "symlink", "/etc/passwd", "not to a relative path"),
    (f"{TOP}/lib/x", "hardlink", "/etc/passwd", "outside the archive's folder"),
    (f"{TOP}/lib/x", "hardlink", f"{TOP}/../x", "outside the archive's folder"),
])
def test_member_checks(name: str, kind: rules.Kind, link: str, bad: str | None) -> None:
    problem = rules.member_problem(name, kind, link, TOP)
    assert (problem is None) if bad is None else (bad in (problem or ""))


def test_members_go_to_the_catalog_folder_and_licenses_to_the_dist_info() -> None:
    m = rules.parse_manifest(json.dumps(_doc()), "m.json")
    cudart = rules.plan(m, "12.8", "linux-x86_64", data.BASE_URL, "m.json")[1]
    assert rules.destination(f"{TOP}/lib/libcudart.so.12", "symlink", cudart) == (
        "nvidia/cuda_runtime/lib/libcudart.so.12")
    assert rules.destination(f"{TOP}/LICENSE", "file", cudart) == (
        "nvidia_cuda_runtime_cu12-12.8.90.dist-info/licenses/LICENSE")
    assert rules.destination(f"{TOP}/", "dir", cudart) is None


def test_store_folders_are_named_by_release_and_machine() -> None:
    assert redistroots.folder_name("12.8.1", "x86_64") == "cuda-redist-12.8.1-x86_64"
    assert redistroots.folder_name("12.8.1", "x86_64", digest="ab" * 32) == (
        "cuda-redist-12.8.1-shaabababababababab-x86_64")
    assert redistroots.folder_name("../../x y", "aarch64") == "cuda-redist-.._.._x_y-aarch64"


# -- the store, against a mirror ----------------------------------------------------------

@pytest.fixture(scope="module")
def cu12(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fake CUDA 12.8.1 release, laid out as NVIDIA's (made once for the module)."""
    mirror = tmp_path_factory.mktemp("mirror12")
    rs.cu12_mirror(mirror, padding=2_000_000,
                   extra={"cuda_nvcc": [rs.Entry("bin/nvcc-copy", "hardlink",
                                                 target="bin/bin2c")]})
    return mirror


@pytest.fixture
def server(cu12: Path) -> Iterator[rs.Server]:
    with rs.serve(cu12) as running:
        yield running


@pytest.fixture
def layout(isolated: Path) -> Layout:
    return Layout(isolated)


def _want(server: rs.Server, **changes: object) -> archives.Want:
    """A fetch of the mirror's manifest as given (its hash is not NVIDIA's pin)."""
    want = archives.Want("12.8", manifest=server.url + MANIFEST, machine="x86_64")
    return replace(want, **changes)  # type: ignore[arg-type]


def _given(server: rs.Server) -> str:
    """The store folder of the mirror's manifest, used as given: named by its digest."""
    return redistroots.folder_name("12.8.1", "x86_64", digest=rs.sha256(server.folder / MANIFEST))


def _nothing_half_written(layout: Layout) -> None:
    """No root without its mark, no unpacking folder: only downloads (resumable) and
    locks may stay after a failure."""
    for path in layout.toolkits.iterdir() if layout.toolkits.is_dir() else ():
        if path.name.endswith(".lock") or path.name.endswith("-downloads"):
            continue
        assert (path / toolkits.MARK).is_file(), f"{path} left half-written"


def _assert_complete(root: Path, major: int, versions: dict[str, str]) -> None:
    found = locate.locate([str(root)], catalog.COMPILER)
    for comp in catalog.COMPILER:
        hit = found.get(comp.name, major)
        assert hit is not None, comp.name
        assert hit.complete, (comp.name, hit.missing)
        assert hit.version == versions[comp.name], (comp.name, hit.version)
        assert hit.folder == str(root / comp.folders[major])


CU12_VERSIONS = {"cuda_nvcc": "12.8.93", "libnvvm": "12.8.93", "cuda_crt": "12.8.93",
                 "cuda_cudart": "12.8.90", "cuda_cccl": "12.8.90"}


def test_a_good_fetch_assembles_a_root_that_locate_finds_whole(
        layout: Layout, server: rs.Server) -> None:
    notes: list[str] = []
    root = archives.fetch(layout, _want(server), note=notes.append, every=0.0)
    assert root == layout.toolkits / _given(server)
    _assert_complete(root, 12, CU12_VERSIONS)
    lib = root / "nvidia/cuda_runtime/lib"
    assert os.readlink(lib / "libcudart.so.12") == "libcudart.so.12.8.90"
    assert (lib / "libcudart.so").resolve() == lib / "libcudart.so.12.8.90"
    assert (root / "nvidia/cuda_nvcc/bin/nvcc-copy").read_bytes() == (
        root / "nvidia/cuda_nvcc/bin/bin2c").read_bytes()
    assert os.access(root / "nvidia/cuda_nvcc/bin/nvcc", os.X_OK)
    out = subprocess.run([root / "nvidia/cuda_nvcc/bin/nvcc", "--version"],
                         capture_output=True, text=True, check=True).stdout
    assert "V12.8.93" in out
    license_ = root / "nvidia_cuda_nvcc_cu12-12.8.93.dist-info/licenses/LICENSE"
    assert license_.read_text().startswith("NVIDIA Software License")
    mark = json.loads((root / toolkits.MARK).read_text())
    assert mark["release"] == "12.8.1" and mark["cuda"] == "12.8"
    assert mark["manifest"]["pinned"] is False
    assert [a["name"] for a in mark["archives"]] == ["cuda_nvcc", "cuda_cudart", "cuda_cccl"]
    assert sorted(p.name for p in layout.toolkits.iterdir()) == [
        f".{_given(server)}.lock", _given(server)]
    assert any(n.startswith("downloading cuda_nvcc 12.8.93: ") and n.endswith(" of 2.0 MB")
               for n in notes), notes
    # a second fetch finds it and asks the server for nothing but the manifest
    before = len(server.requests)
    assert archives.fetch(layout, _want(server), note=notes.append) == root
    assert [r for r, _ in server.requests[before:]] == [MANIFEST]
    assert redistroots.existing(layout, "12.8", "x86_64", manifest=server.url + MANIFEST) == root
    assert redistroots.existing(layout, "12.8", "x86_64") is None  # not NVIDIA's pinned one
    assert redistroots.existing(layout, "12.9", "x86_64", manifest=server.url + MANIFEST) is None


def test_the_source_offers_the_root_for_torchs_cuda(layout: Layout, server: rs.Server) -> None:
    torch = Torch("2.9.1+cu128", "12.8", "/site/torch", None)
    target = None  # the protocol's; unused
    before = source.SOURCE.offer(target, torch, layout, CTX)
    assert before is not None and before.roots == ()
    assert before.description.startswith("nothing fetched for CUDA 12.8 yet")
    root = archives.fetch(layout, _want(server, machine=None), note=lambda _: None)
    named = Context(((registry.REDIST_MANIFEST.name, server.url + MANIFEST),), "/",
                    "/usr/bin/python3")
    offer = source.SOURCE.offer(target, torch, layout, named)
    assert offer is not None and offer.source == "redist" and offer.roots == (str(root),)
    cu13 = Torch("2.11.0+cu130", "13.0", "/site/torch", "==13.0.2")
    other = source.SOURCE.offer(target, cu13, layout, named)
    assert other is not None and other.roots == ()


def test_a_manifest_given_never_takes_the_pinned_releases_place(
        layout: Layout, tmp_path: Path) -> None:
    """Before: a --redist-manifest labelled 12.8.1 wrote the folder the
    pinned 12.8.1 uses, and later runs without the flag (doctor too) took it as
    NVIDIA's. Its folder is named by its digest, and only runs that name it use it."""
    mirror = tmp_path / "mirror"
    rs.cu12_mirror(mirror)  # labelled 12.8.1, but not NVIDIA's bytes
    root = archives.fetch(layout, archives.Want("12.8", manifest=str(mirror / MANIFEST)),
                          note=lambda _: None)
    assert root.name != redistroots.folder_name("12.8.1")
    assert root.name == redistroots.folder_name("12.8.1", digest=rs.sha256(mirror / MANIFEST))
    assert not (layout.toolkits / redistroots.folder_name("12.8.1")).exists()
    torch = Torch("2.9.1+cu128", "12.8", "/site/torch", None)
    assert redistroots.existing(layout, "12.8") is None
    plain = source.SOURCE.offer(None, torch, layout, CTX)
    assert plain is not None and plain.roots == ()
    assert redistroots.existing(layout, "12.8", manifest=str(mirror / MANIFEST)) == root
    assert redistroots.existing(layout, "12.8", manifest=str(tmp_path / "other.json")) is None
    # a folder under the pinned name whose mark is not the pinned manifest's: not taken
    fake = layout.toolkits / redistroots.folder_name("12.8.1")
    shutil.copytree(root, fake, symlinks=True)
    assert redistroots.existing(layout, "12.8") is None


@pytest.mark.parametrize("url", ["http://mirror.example/redistrib_12.8.1.json",
                                 "HTTP://10.0.0.1:8080/redistrib_12.8.1.json"])
def test_a_manifest_given_over_plain_http_is_refused(layout: Layout, url: str) -> None:
    with pytest.raises(ComponentError) as caught:
        archives.fetch(layout, archives.Want("12.8", manifest=url), note=lambda _: None)
    text = str(caught.value)
    assert "refusing the manifest" in text and "plain http" in text
    assert "WHEELCUDA_ALLOW_HTTP=1" in text and "https://" in text
    assert not any(layout.toolkits.iterdir()) if layout.toolkits.exists() else True


def test_plain_http_from_this_machine_or_when_allowed_is_read(server: rs.Server,
                                                              layout: Layout) -> None:
    assert server.url.startswith("http://127.0.0.1")
    archives.read_manifest(_want(server))  # the loopback: the tests' own servers
    elsewhere = archives.Want("12.8", manifest="http://localhost.invalid/x.json",
                              allow_http=True)
    with pytest.raises(ComponentError) as caught:  # allowed: read, and unreachable
        archives.read_manifest(elsewhere)
    assert "refusing" not in str(caught.value) and "could not read" in str(caught.value)


def test_a_known_release_manifest_is_checked_against_its_pin(
        layout: Layout, server: rs.Server, cu12: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    want = archives.Want("12.8", base_url=server.url, machine="x86_64")
    with pytest.raises(ComponentError) as err:
        archives.fetch(layout, want, note=lambda _: None)
    text = str(err.value)
    assert f"the manifest {server.url}{MANIFEST} does not match the one wheelcuda pins" in text
    assert f"expected sha256 {data.RELEASES[3].manifest_sha256}" in text
    assert data.RELEASES[3].manifest_sha256 == (
        "249e28a83008d711d5f72880541c8be6253f6d61608461de4fcb715554a6cf17")
    assert f"got {rs.sha256(cu12 / MANIFEST)}" in text
    assert f"--redist-manifest {server.url}{MANIFEST}" in text
    assert server.count(NVCC_URL) == 0
    _nothing_half_written(layout)
    # the same mirror, with the pin of its own manifest: fetched, and marked pinned
    pinned = (*data.RELEASES, data.Release("12.8.9", rs.sha256(cu12 / MANIFEST)))
    monkeypatch.setattr(data, "RELEASES", pinned)
    (cu12 / "redistrib_12.8.9.json").write_bytes((cu12 / MANIFEST).read_bytes())
    try:
        root = archives.fetch(layout, want, note=lambda _: None)
    finally:
        (cu12 / "redistrib_12.8.9.json").unlink()
    mark = json.loads((root / toolkits.MARK).read_text())
    assert mark["manifest"]["pinned"] is True
    # known release: reused without asking the server anything
    before = len(server.requests)
    assert archives.fetch(layout, want, note=lambda _: None) == root
    assert len(server.requests) == before


def test_a_corrupt_archive_is_deleted_and_named(layout: Layout, server: rs.Server,
                                                cu12: Path) -> None:
    server.faults[NVCC_URL] = "corrupt"
    with pytest.raises(ComponentError) as err:
        archives.fetch(layout, _want(server), note=lambda _: None)
    text = str(err.value)
    assert f"from {server.url}{NVCC_URL} does not match the manifest's sha256" in text
    assert f"expected {rs.sha256(cu12 / NVCC_URL)}, got " in text
    downloads = layout.toolkits / f".fetch-{_given(server)}-downloads"
    assert not any(p.name.startswith("cuda_nvcc") for p in downloads.iterdir())
    _nothing_half_written(layout)
    del server.faults[NVCC_URL]  # the next run downloads it anew
    _assert_complete(archives.fetch(layout, _want(server), note=lambda _: None), 12,
                     CU12_VERSIONS)


@pytest.mark.parametrize("fault", ["404", "500"])
@pytest.mark.parametrize("what", [MANIFEST, NVCC_URL])
def test_http_errors_are_named(layout: Layout, server: rs.Server, fault: str, what: str
                               ) -> None:
    server.faults[what] = fault
    with pytest.raises(ComponentError) as err:
        archives.fetch(layout, _want(server), note=lambda _: None)
    assert f"could not read {server.url}{what}: the server answered HTTP {fault}" in str(err.value)
    assert "--from DIR" in str(err.value)
    _nothing_half_written(layout)


def test_a_truncated_download_stops_with_the_part_kept_and_resumes(
        layout: Layout, server: rs.Server) -> None:
    server.faults[NVCC_URL] = "truncate"
    with pytest.raises(ComponentError) as err:
        archives.fetch(layout, _want(server), note=lambda _: None)
    assert f"the download of {server.url}{NVCC_URL} stopped at " in str(err.value)
    assert "run again: the download resumes" in str(err.value)
    part = layout.toolkits / f".fetch-{_given(server)}-downloads" / (
        NVCC_URL.rsplit("/", 1)[1] + ".part")
    kept = part.stat().st_size
    assert kept > 0
    _nothing_half_written(layout)
    # `cache prune` would remove it, under the lock a fetch of that root holds
    assert (part.parent, layout.lock(layout.toolkits, _given(server))) in [
        (path, lock) for path, lock, _ in prune.candidates(layout)]
    del server.faults[NVCC_URL]
    root = archives.fetch(layout, _want(server), note=lambda _: None)
    assert server.ranges(NVCC_URL)[-1] == f"bytes={kept}-"
    _assert_complete(root, 12, CU12_VERSIONS)


def test_a_connection_that_drops_once_is_resumed_in_the_same_run(
        layout: Layout, server: rs.Server) -> None:
    server.faults[NVCC_URL] = "truncate-once"
    _assert_complete(archives.fetch(layout, _want(server), note=lambda _: None), 12,
                     CU12_VERSIONS)
    ranges = server.ranges(NVCC_URL)
    assert ranges[0] is None and ranges[1] is not None and ranges[1].startswith("bytes=")


def test_a_server_that_ignores_range_gets_a_whole_download(
        layout: Layout, server: rs.Server, cu12: Path) -> None:
    downloads = layout.private(layout.toolkits) / f".fetch-{_given(server)}-downloads"
    downloads.mkdir()
    name = NVCC_URL.rsplit("/", 1)[1]
    (downloads / f"{name}.part").write_bytes((cu12 / NVCC_URL).read_bytes()[:1000])
    server.faults[NVCC_URL] = "ignore-range"
    notes: list[str] = []
    root = archives.fetch(layout, _want(server), note=notes.append)
    assert server.ranges(NVCC_URL) == ["bytes=1000-"]
    assert any("was sent whole, not from byte 1000: starting over" in n for n in notes)
    _assert_complete(root, 12, CU12_VERSIONS)


@pytest.mark.parametrize(("entries", "why"), [
    ([rs.Entry("../escape", data=b"x")], "'../escape' is not a plain relative path"),
    ([rs.Entry("x/../../escape", data=b"x")], "is not a plain relative path"),
    ([rs.Entry("lib/evil", "symlink", target="../../../../etc/passwd")],
     "points to '../../../../etc/passwd', outside the archive's folder"),
    ([rs.Entry("lib/abs", "symlink", target="/etc/passwd")], "not to a relative path"),
    ([rs.Entry("lib/fifo", "fifo")], "is a device, fifo or other special file"),
    # each link looks harmless alone; followed through the first, the second leads out
    ([rs.Entry("a/b/s", "symlink", target=".."),
      rs.Entry("a/b/t", "symlink", target="s/../..")], "outside nvidia/cuda_runtime"),
    ([rs.Entry("lib/sneak", "symlink", target="."),
      rs.Entry("lib/sneak/x", data=b"through a link")], "to be a folder, and it is not one"),
])
def test_unsafe_archives_are_refused(tmp_path: Path, layout: Layout, entries: list[rs.Entry],
                                     why: str) -> None:
    mirror = tmp_path / "bad"
    rs.cu12_mirror(mirror, extra={"cuda_cudart": entries})
    with rs.serve(mirror) as server, pytest.raises(ComponentError) as err:
        archives.fetch(layout, _want(server), note=lambda _: None)
    assert why in str(err.value)
    assert "cuda_cudart-linux-x86_64-12.8.90-archive.tar.xz" in str(err.value)
    assert not (tmp_path / "escape").exists()
    _nothing_half_written(layout)


_CHILD = """
import sys
from pathlib import Path
from wheelcuda._sources.redist import store_archives as archives
from wheelcuda._store.layout import Layout
from wheelcuda._store import prune
from wheelcuda._sources.redist import store_roots as redistroots
want = archives.Want("12.8", manifest=sys.argv[2], machine="x86_64")
print(archives.fetch(Layout(Path(sys.argv[1])), want, note=lambda _: None))
"""


def _child(layout: Layout, server: rs.Server) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", _CHILD, str(layout.root),
                             server.url + MANIFEST], env=fakes.pythonpath_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_killed_download_is_resumed_by_the_next_run(layout: Layout, server: rs.Server
                                                      ) -> None:
    server.faults[NVCC_URL] = "slow"  # 2 MB at 64 KB per 20 ms: about 0.7 s
    part = layout.toolkits / f".fetch-{_given(server)}-downloads" / (
        NVCC_URL.rsplit("/", 1)[1] + ".part")
    child = _child(layout, server)
    deadline = time.monotonic() + 60
    while not (part.exists() and part.stat().st_size > 300_000):
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    child.communicate()
    kept = part.stat().st_size
    assert not (layout.toolkits / _given(server)).exists()
    del server.faults[NVCC_URL]
    root = archives.fetch(layout, _want(server), note=lambda _: None)
    resumed = server.ranges(NVCC_URL)[-1]
    assert resumed is not None and int(resumed[len("bytes="):-1]) >= kept
    _assert_complete(root, 12, CU12_VERSIONS)
    assert sorted(p.name for p in layout.toolkits.iterdir()) == [
        f".{_given(server)}.lock", _given(server)]


def test_two_fetches_at_once_download_once(layout: Layout, server: rs.Server) -> None:
    server.faults[NVCC_URL] = "slow"
    children = [_child(layout, server) for _ in range(2)]
    outs = [c.communicate(timeout=120) for c in children]
    assert [c.returncode for c in children] == [0, 0], outs
    roots = {out.strip() for out, _ in outs}
    assert roots == {str(layout.toolkits / _given(server))}
    for rel in (NVCC_URL, NVCC_URL.replace("cuda_nvcc", "cuda_cudart").replace("93", "90"),
                NVCC_URL.replace("cuda_nvcc", "cuda_cccl").replace("93", "90")):
        assert server.count(rel) == 1, (rel, server.requests)
    assert server.count("cuda_nvprof/linux-x86_64/"
                        "cuda_nvprof-linux-x86_64-12.8.93-archive.tar.xz") == 0


def test_archives_from_a_folder(layout: Layout, cu12: Path, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    """``fetch --from DIR``: files by name in one folder, the manifest among them; the
    manifest of a known release still has to match its pin."""
    bring = tmp_path / "bring"
    bring.mkdir()
    for path in cu12.rglob("*.tar.xz"):
        if "nvprof" not in path.name:
            shutil.copy(path, bring / path.name)
    shutil.copy(cu12 / MANIFEST, bring / "redistrib_12.8.9.json")
    monkeypatch.setattr(data, "RELEASES", (data.Release("12.8.9", rs.sha256(cu12 / MANIFEST)),))
    want = archives.Want("12.8", source=bring, base_url="http://127.0.0.1:9/unreachable/",
                         machine="x86_64")
    (bring / NVCC_URL.rsplit("/", 1)[1]).rename(tmp_path / "aside.tar.xz")
    with pytest.raises(ComponentError) as err:
        archives.fetch(layout, want, note=lambda _: None)
    assert f"cuda_nvcc-linux-x86_64-12.8.93-archive.tar.xz is not in {bring}" in str(err.value)
    assert "http://127.0.0.1:9/unreachable/cuda_nvcc/" in str(err.value)
    (tmp_path / "aside.tar.xz").rename(bring / NVCC_URL.rsplit("/", 1)[1])
    _assert_complete(archives.fetch(layout, want, note=lambda _: None), 12, CU12_VERSIONS)
    assert (bring / NVCC_URL.rsplit("/", 1)[1]).is_file()  # the person's copy stays


def test_the_offline_listing(cu12: Path, server: rs.Server) -> None:
    text = archives.listing(archives.Want("12.8", manifest=str(cu12 / MANIFEST),
                                          base_url=server.url, machine="x86_64"))
    size = (cu12 / NVCC_URL).stat().st_size
    assert f"  {server.url}{NVCC_URL}  {size} bytes  sha256 {rs.sha256(cu12 / NVCC_URL)}" in text
    assert f"then run: wheelcuda fetch --redist-manifest {cu12 / MANIFEST} --from DIR" in text
    assert f"  {cu12 / MANIFEST}  sha256 {rs.sha256(cu12 / MANIFEST)}" in text
    assert "cuda_nvprof" not in text
    assert server.requests == []  # a local manifest: no network
    # 12.8.1's archives are known as data: listed with URL, size and sha256
    offline = archives.listing(archives.Want("12.8", machine="x86_64"))
    assert f"{data.BASE_URL}{MANIFEST}  sha256 {data.RELEASES[3].manifest_sha256}" in offline
    assert "cuda_nvcc-linux-x86_64-12.8.93-archive.tar.xz  79015464 bytes" in offline
    assert offline.splitlines()[0].endswith("then: wheelcuda fetch --from DIR")
    # a release without known entries: the manifest to take them from
    unknown = archives.listing(archives.Want("12.9", machine="x86_64"))
    assert "the cuda_nvcc, cuda_cudart, cuda_cccl archives it lists for linux-x86_64" in unknown
    assert unknown.endswith("then run: wheelcuda fetch --from DIR")
    named = archives.listing(archives.Want("12.8", manifest=f"{server.url}x/{MANIFEST}"))
    assert named.endswith(f"wheelcuda fetch --redist-manifest DIR/{MANIFEST} --from DIR")
    assert server.requests == []


# -- CUDA 13, from the real wheels --------------------------------------------------------

WHEELS_VENV = Path(os.environ.get("WHEELCUDA_TEST_WHEELS_VENV",
                                  Path(__file__).resolve().parents[1] / ".venv-wheels"))


@pytest.fixture(scope="module")
def cu13(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CUDA 13.0.2 release made from the real CUDA 13 wheels' files, split into the
    archives NVIDIA ships them in. Files over 64 KB are cut to that, but nvcc, unless
    WHEELCUDA_TEST_REDIST_FULL=1 (every byte: about 30 s more on two cores)."""
    sites = sorted(WHEELS_VENV.glob("lib/python*/site-packages"))
    if not sites or not (sites[0] / "nvidia/cu13/bin/nvcc").is_file():
        message = f"no CUDA 13 wheels in {WHEELS_VENV}: run `make wheels-venv`"
        if os.environ.get("WHEELCUDA_REQUIRE_INTEGRATION"):
            pytest.fail(message)
        pytest.skip(message)
    mirror = tmp_path_factory.mktemp("mirror13")
    full = os.environ.get("WHEELCUDA_TEST_REDIST_FULL") == "1"
    rs.cu13_mirror(mirror, sites[0], keep=None if full else 64 * 1024)
    return mirror


@pytest.mark.integration
def test_cuda_13_archives_from_the_real_wheels(layout: Layout, cu13: Path, tmp_path: Path
                                               ) -> None:
    want = archives.Want("13.0", manifest=str(cu13 / "redistrib_13.0.2.json"),
                         base_url=str(cu13), machine="x86_64")
    root = archives.fetch(layout, want, note=lambda _: None)
    _assert_complete(root, 13, {"cuda_nvcc": "13.0.88", "libnvvm": "13.0.88",
                                "cuda_crt": "13.0.88", "cuda_cudart": "13.0.96",
                                "cuda_cccl": "13.0.85"})
    out = subprocess.run([root / "nvidia/cu13/bin/nvcc", "--version"], capture_output=True,
                         text=True, check=True).stdout
    assert "V13.0.88" in out
    for dist in ("nvidia_cuda_nvcc-13.0.88", "nvidia_cuda_crt-13.0.88", "nvidia_nvvm-13.0.88",
                 "nvidia_cuda_runtime-13.0.96", "nvidia_cuda_cccl-13.0.85"):
        assert (root / f"{dist}.dist-info/licenses/LICENSE").is_file()
    assert (root / "nvidia/cu13/include/cccl/cub/cub.cuh").is_file()
    if os.environ.get("WHEELCUDA_TEST_REDIST_FULL") == "1" and shutil.which("g++"):
        # every byte is there: the archives' own nvcc, cicc and ptxas compile a kernel
        (tmp_path / "k.cu").write_text("#include <cub/cub.cuh>\n"
                                       "__global__ void k(float *x) { x[0] = 1.0f; }\n")
        subprocess.run([root / "nvidia/cu13/bin/nvcc", "-cubin", "-arch=sm_90", "-o",
                        tmp_path / "k.cubin", tmp_path / "k.cu"], check=True,
                       env={"PATH": "/usr/bin:/bin"})
        assert (tmp_path / "k.cubin").stat().st_size > 0


def test_prune_takes_unused_archives_and_stopped_downloads(layout: Layout, server: rs.Server
                                                           ) -> None:

    root = archives.fetch(layout, _want(server), note=lambda _: None)
    stopped = layout.toolkits / ".fetch-cuda-redist-12.9.1-x86_64-downloads"
    stopped.mkdir()
    (stopped / "cuda_nvcc-linux-x86_64-12.9.86-archive.tar.xz.part").write_bytes(b"x" * 10)
    removed, _ = prune.prune(layout, dry_run=True)
    assert [(r.path, r.why) for r in removed] == [(stopped, "left by a run that was stopped")]
    hour_ago = time.time() - prune.FRESH - 60  # fetched long ago, and no tree uses it
    os.utime(root / toolkits.MARK, (hour_ago, hour_ago))
    removed, busy = prune.prune(layout)
    assert sorted((r.path, r.why) for r in removed) == sorted([
        (stopped, "left by a run that was stopped"), (root, "toolkit: no tree uses it")])
    assert busy == [] and not root.exists() and not stopped.exists()


# -- a manifest on disk, bad URLs, no network, an archive that cannot unpack, CUDA 11 -----

def test_a_manifest_on_disk_takes_its_archives_from_beside_it(layout: Layout, cu12: Path
                                                              ) -> None:
    """An offline copy: --redist-manifest FILE (or file://), no server, no --from."""
    notes: list[str] = []
    for manifest in (str(cu12 / MANIFEST), (cu12 / MANIFEST).as_uri()):
        root = archives.fetch(layout, archives.Want("12.8", manifest=manifest,
                                                    machine="x86_64"), note=notes.append)
        _assert_complete(root, 12, CU12_VERSIONS)
        shutil.rmtree(root)
    assert f"copying cuda_nvcc 12.8.93 from {cu12 / NVCC_URL}" in notes


@pytest.mark.parametrize("url", ["http://[bad", "http://[bad/x/redistrib_12.8.1.json"])
def test_a_malformed_url_is_named(layout: Layout, url: str) -> None:
    for want in (archives.Want("12.8", base_url=url), archives.Want("12.8", manifest=url)):
        with pytest.raises(ComponentError, match="not a URL"):
            archives.fetch(layout, want)
    _nothing_half_written(layout)


def test_without_the_network_the_error_lists_what_to_bring(layout: Layout) -> None:
    """A known release from a mirror that does not answer: the archives wheelcuda knows
    for 12.8.1, with sizes and sha256, and `fetch --from DIR`."""
    with pytest.raises(ComponentError) as caught:
        archives.fetch(layout, archives.Want("12.8", base_url="http://127.0.0.1:9/",
                                             machine="x86_64"))
    text = str(caught.value)
    assert text.startswith("could not read http://127.0.0.1:9/redistrib_12.8.1.json: could "
                           "not connect")
    assert ("http://127.0.0.1:9/cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-12.8.93-archive."
            "tar.xz  79015464 bytes  sha256 9961b3484b6b71314063709a4f9529654f96782ad39e72bf1e"
            "00f070db8210d3") in text
    assert "then: wheelcuda fetch --from DIR" in text and "--no-fetch" not in text


def test_an_archive_that_matches_yet_cannot_be_unpacked_is_not_kept(
        layout: Layout, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    rs.cu12_mirror(mirror)
    doc = json.loads((mirror / MANIFEST).read_text())
    entry = doc["cuda_cccl"]["linux-x86_64"]
    (mirror / entry["relative_path"]).write_bytes(os.urandom(4096))  # not xz, but listed so
    entry.update(size="4096", sha256=rs.sha256(mirror / entry["relative_path"]))
    (mirror / MANIFEST).write_text(json.dumps(doc))
    want = archives.Want("12.8", manifest=str(mirror / MANIFEST), machine="x86_64")
    for _ in range(2):  # each run says the same, and downloads it anew
        with pytest.raises(ComponentError, match="cannot be unpacked") as caught:
            archives.fetch(layout, want, note=lambda _: None)
        assert "the manifest lists a broken archive" in str(caught.value)
        name = redistroots.folder_name("12.8.1", "x86_64", digest=rs.sha256(mirror / MANIFEST))
        downloads = layout.toolkits / f".fetch-{name}-downloads"
        assert not any(p.name.startswith("cuda_cccl") for p in downloads.iterdir())
        assert not (layout.toolkits / name).exists()


def test_cuda_11_is_refused_with_the_ways_that_work() -> None:
    with pytest.raises(ComponentError) as caught:
        rules.choose_release("11.8")
    assert "takes CUDA 11.8's compiler from no NVIDIA archive" in caught.value.message
    assert caught.value.fix is not None and "--toolkit /path/to/cuda-11.8" in caught.value.fix
