"""sccache's counts over a build, as the install summary and ``cache show`` say them
(_rules/compile_counts.py, _commands/compile_counts.py), and the credentials doctor warns
of (_probe/compile_cache.py); the real server's counts are read in
tests/integration/test_compile_cache.py."""

from __future__ import annotations

from wheelcuda._commands import compile_counts as sccache_counts
from wheelcuda._probe import compile_cache
from wheelcuda._rules import compile_counts


def test_a_builds_counts_are_the_difference_and_a_restarted_server_gives_none() -> None:
    before = {"hits": 3, "misses": 5, "remote": 0}
    after = {"hits": 12, "misses": 5, "remote": 2}
    assert compile_counts.difference(before, after) == {
        "hits": 9, "misses": 0, "remote": 2, "clang_hits": 0, "clang_misses": 0,
        "host_hits": 0, "host_misses": 0}
    assert compile_counts.difference(None, after) is None
    assert compile_counts.difference(before, None) is None
    # the server stopped (idle) and started again during the build: its counts began at 0
    assert compile_counts.difference(before, {"hits": 1, "misses": 0, "remote": 0}) is None


def test_the_counts_are_said_as_steps() -> None:
    assert compile_counts.said({"hits": 9, "misses": 0, "remote": 0}) == \
        "compile cache: 9 of 9 nvcc steps hit, 0 compiled on a build server"
    assert compile_counts.said({"hits": 0, "misses": 1, "remote": 1}) == \
        "compile cache: 0 of 1 nvcc step hit, 1 compiled on a build server"


def test_clang_and_host_compiles_are_said_by_kind() -> None:
    """sccache's keys for what it compiled (as sccache 0.16 names them: ``ptx [cicc]``,
    ``cuda [clang]``, ``c++ [gcc]``) fall to nvcc's steps, the clang toolkit's CUDA
    compiles and the host's C++ compiles, each said on its own."""
    assert [compile_counts.kind(k) for k in ("ptx [cicc]", "cubin [ptxas]", "cuda [nvcc]",
                                             "cuda [cudafe++]", "cuda [clang]", "c++ [gcc]",
                                             "c++ [clang]", "c [gcc]")] == \
        ["nvcc"] * 4 + ["clang", "host", "host", "host"]
    counts = {"clang_hits": 3, "clang_misses": 0, "host_hits": 1, "host_misses": 1,
              "remote": 0}
    assert compile_counts.said(counts, 3) == ("compile cache: 3 of 3 clang CUDA compiles hit, "
                                              "1 of 2 C++ compiles hit, 0 compiled on a "
                                              "build server")
    assert "counted 1 clang CUDA compile for 3" in compile_counts.said(
        {"clang_hits": 1, "remote": 0}, 3)


def test_no_counts_without_the_cache() -> None:
    assert sccache_counts.counts({}) is None
    assert sccache_counts.counts({"WHEELCUDA_COMPILE_CACHE": "/nonexistent/sccache"}) is None


def test_a_store_address_with_a_password_is_a_secret() -> None:
    assert compile_cache._secret("SCCACHE_REDIS_ENDPOINT", "redis://u:pw@127.0.0.1:6379")
    assert not compile_cache._secret("SCCACHE_REDIS_ENDPOINT", "redis://127.0.0.1:6379")
    assert not compile_cache._secret("SCCACHE_WEBDAV_ENDPOINT", "http://h/a@b")
    assert compile_cache._secret("SCCACHE_REDIS_ENDPOINT", "u:pw@127.0.0.1:6379")
    assert compile_cache._secret("SCCACHE_WEBDAV_TOKEN", "t")
    assert not compile_cache._secret("SCCACHE_WEBDAV_TOKEN", "")


def test_fewer_steps_than_compiles_says_the_server_stopped() -> None:
    """sccache 0.16's server stops in the middle of a compile longer than its idle timeout
    (seen with SCCACHE_IDLE_TIMEOUT=3 and an 8 s compile: the compile ran, uncounted); a
    server restarted during the build counts only what came after."""
    none = compile_counts.said({"hits": 0, "misses": 0, "remote": 0}, 3)
    assert "counted 0 nvcc steps for 3 CUDA compiles" in none and "SCCACHE_IDLE_TIMEOUT" in none
    partial = compile_counts.said({"hits": 1, "misses": 1, "remote": 0}, 3)
    assert partial.startswith("compile cache: sccache's server counted 2 nvcc steps"), partial
    assert compile_counts.said({"hits": 12, "misses": 0, "remote": 0}, 3).startswith(
        "compile cache: 12 of 12 nvcc steps hit")
