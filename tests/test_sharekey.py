"""The share key: the part of a build key that decides whether a wheel built
on another machine serves here."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from packaging.version import Version

from wheelcuda._rules import buildkey
from wheelcuda._team import rules_key as sharekey


def fields(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "packages": ["sha256:abc"], "torch": "2.9.1+cu128", "torch_cuda": "12.8",
        "compiler": "12.8.93", "archs": "9.0", "prune": True, "python": "cp311",
        "cxx11_abi": True, "variables": {"B": "2", "A": "1"},
        "installer_args": ["--no-deps", "-Cfoo=bar"], "machine": "x86_64",
        "host_compiler": "gcc 12.2.0", "names": ("causal-conv1d",), "libc": "glibc 2.36"}
    return buildkey.BuildKey(**{**base, **changes}).fields()


def test_share_fields_are_the_subset_that_crosses_machines() -> None:
    out = sharekey.share_fields(fields())
    assert out == {
        "packages": ["sha256:abc"], "torch": "2.9.1+cu128", "torch_cuda": "12.8",
        "compiler_release": "12.8", "archs": "9.0", "prune": True, "python": "cp311",
        "cxx11_abi": True, "variables": {"A": "1", "B": "2"},
        "installer_args": ["-Cfoo=bar"], "machine": "x86_64", "cxx_std": "the build's own",
        "libc": "glibc 2.36"}


@pytest.mark.parametrize("change", [
    {"host_compiler": "clang 18"}, {"names": ["other"]}, {"compiler": "12.8.61"},
    {"compiler": "12.8"}])
def test_what_does_not_change_the_share_id(change: dict[str, Any]) -> None:
    assert sharekey.share_id(fields(**change)) == sharekey.share_id(fields())


@pytest.mark.parametrize("change", [
    {"packages": ["sha256:abd"]}, {"torch": "2.9.0+cu128"}, {"torch_cuda": "12.6"},
    {"compiler": "12.9.41"}, {"compiler": "13.0"}, {"archs": "12.0"}, {"prune": False},
    {"python": "cp312"}, {"cxx11_abi": False}, {"cxx11_abi": None},
    {"variables": {"A": "1"}}, {"installer_args": ["-Cfoo=baz"]}, {"machine": "aarch64"},
    {"cxx_std": 20}])
def test_what_changes_the_share_id(change: dict[str, Any]) -> None:
    assert sharekey.share_id(fields(**change)) != sharekey.share_id(fields())


def test_share_fields_of_share_fields_are_the_same() -> None:
    once = sharekey.share_fields(fields())
    assert sharekey.share_fields(once) == once
    assert sharekey.share_id(once) == sharekey.share_id(fields())
    # as read back from a wheel: through JSON
    assert sharekey.share_id(json.loads(json.dumps(once))) == sharekey.share_id(fields())


def test_compiler_release() -> None:
    assert sharekey.compiler_release("13.0.88") == "13.0"
    assert sharekey.compiler_release("13.0") == "13.0"
    assert sharekey.compiler_release("(not fetched)") == "(not fetched)"
    assert sharekey.compiler_release(None) is None
    # the clang toolkit: its clang and ptxas's release, not this machine's paths' digest,
    # and never the bare ptxas release an nvcc 12.8 build travels as
    clang = "clang 22.1.8 + ptxas 12.8.93 (0123456789ab)"
    assert sharekey.compiler_release(clang) == "clang 22.1.8 + ptxas 12.8"
    assert sharekey.compiler_release("clang 22.1.8 + ptxas 12.8.61 (ffffffffffff)") == \
        sharekey.compiler_release(clang)
    base = {"packages": ["x==1"], "torch": "2.9.1+cu128", "torch_cuda": "12.8"}
    assert sharekey.share_id({**base, "compiler": clang}) != \
        sharekey.share_id({**base, "compiler": "12.8.93"})


def test_share_id_is_16_hex() -> None:
    share = sharekey.share_id(fields())
    assert len(share) == 16
    int(share, 16)


def test_local_label_is_a_valid_local_version() -> None:
    label = sharekey.local_label(sharekey.share_id(fields()))
    assert label.startswith("wc") and len(label) == 14
    assert Version(f"1.0+{label}").local == label
    assert Version(f"1.0+cu128.{label}").local == f"cu128.{label}"
    with pytest.raises(ValueError, match="not a share id"):
        sharekey.local_label("XYZ")


def embedded(f: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps({"share_id": sharekey.share_id(f),
                                  "fields": sharekey.share_fields(f)}))


def test_matches_exactly() -> None:
    assert sharekey.matches(embedded(fields()), fields())
    assert sharekey.matches(embedded(fields()), fields(compiler="12.8.1", host_compiler="x"))
    assert not sharekey.matches(embedded(fields(archs="9.0;12.0")), fields())


def test_a_tampered_key_does_not_match() -> None:
    key = embedded(fields())
    tampered = copy.deepcopy(key)
    tampered["fields"]["archs"] = "12.0"  # the id left as it was
    assert not sharekey.matches(tampered, fields())
    assert not sharekey.matches(tampered, fields(archs="12.0"))
    wrong_id = {**key, "share_id": "0" * 16}
    assert not sharekey.matches(wrong_id, fields())
    extra = copy.deepcopy(key)
    extra["fields"]["more"] = 1
    assert not sharekey.matches(extra, fields())
    assert not sharekey.matches({"share_id": key["share_id"]}, fields())
    assert not sharekey.matches({"fields": "x", "share_id": key["share_id"]}, fields())


def test_install_and_the_backend_name_the_compiler_one_way() -> None:
    """Resolved.shared_compiler, which both read: the tree's clang (or the one a fetch
    would bring) travels as clang, an nvcc tree as its release, nothing as torch's CUDA."""
    from types import SimpleNamespace  # noqa: PLC0415

    from wheelcuda import _pipeline as pipeline  # noqa: PLC0415
    from wheelcuda._values import Inventory  # noqa: PLC0415

    clang = "clang 22.1.8 + ptxas 12.8.93 (0123456789ab)"
    nothing = SimpleNamespace(compiler=None)
    toolkit = SimpleNamespace(inventory=Inventory((), ()), major=12, source="wheels",
                              by_clang=False)
    torch = SimpleNamespace(cuda="12.8")
    get = vars(pipeline.Resolved)["shared_compiler"].fget

    def ask(home: object, fetch: object, kit: object = toolkit) -> object:
        return get(SimpleNamespace(home=home, fetch=fetch, toolkit=kit, torch=torch,
                                   clang=SimpleNamespace(version="22.1.8")))
    # the backend keys before any tree: the clang toolkit still travels as clang
    clang_kit = SimpleNamespace(inventory=Inventory((), ()), major=12, source="clang",
                                by_clang=True)
    assert ask(None, nothing, clang_kit) == "clang 22.1.8 + ptxas 12.8"
    assert ask(SimpleNamespace(compiler=clang, nvcc_release="12.8"), nothing) == \
        "clang 22.1.8 + ptxas 12.8"
    assert ask(None, SimpleNamespace(compiler=clang)) == "clang 22.1.8 + ptxas 12.8"
    assert ask(SimpleNamespace(compiler="12.8.93", nvcc_release="12.8"), nothing) == "12.8"
    assert ask(None, nothing) == "12.8"


def test_the_c_library_travels_in_the_key() -> None:
    """A wheel built against glibc 2.39 does not load on 2.31: another label."""
    from wheelcuda._probe import machine  # noqa: PLC0415

    base = {"packages": ["x==1"], "torch": "2.14.1", "torch_cuda": "13.0", "compiler": "13.0"}
    assert sharekey.share_id({**base, "libc": "glibc 2.39"}) != \
        sharekey.share_id({**base, "libc": "glibc 2.31"})
    assert machine.libc().startswith("glibc 2.")


def test_a_key_of_another_format_is_said_to_be_one() -> None:
    """A field added to the key made every wheel shared before it silently never match;
    the key file says its format, and a wheel of another is named as such (written
    before the field existed: format 1)."""
    wanted = fields()
    carried = {"share_id": sharekey.share_id(wanted), "fields": sharekey.share_fields(wanted)}
    assert sharekey.other_format(carried) is None and sharekey.matches(carried, wanted)
    newer = {**carried, "format": sharekey.KEY_FORMAT + 1}
    assert sharekey.other_format(newer) == sharekey.KEY_FORMAT + 1
    assert not sharekey.matches(newer, wanted)
    assert sharekey.other_format({**carried, "format": "two"}) == -1


def test_the_key_is_one_value_whose_id_leaves_out_what_travels_alone() -> None:
    """Fields were added to the key after hashing in three places; the key is one frozen
    value now: its id covers what tells this machine's builds apart, the C library and
    the compiler's release travel with the shared key only."""
    one = buildkey.BuildKey(packages=("x",), torch="2.14.1", torch_cuda="13.0",
                            compiler="13.0.88", archs="9.0", python="cp311", cxx11_abi=True,
                            libc="glibc 2.36")
    other_libc = buildkey.BuildKey(**{**one.__dict__, "libc": "glibc 2.41"})
    assert one.id == other_libc.id and one.shared() != other_libc.shared()
    assert one.fields()["compiler_release"] == "13.0" == one.shared()["compiler_release"]
    before_fetch = buildkey.BuildKey(**{**one.__dict__, "compiler": "13.0", "release": "13.0"})
    assert before_fetch.shared() == one.shared()  # machine B, no compiler yet: the same key
