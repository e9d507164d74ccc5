"""The libcuda stub: symbol harvest on fake headers, and a real build on the wheels' cuda.h."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from wheelcuda._store import stub
from wheelcuda.errors import ComponentError, ToolError

ENV = dict(os.environ)

#: The environment `make wheels-venv` makes with NVIDIA's CUDA 13 wheels (the path make
#: exports, else the repository's default; as tests/integration/conftest.py finds it).
WHEELS_VENV = Path(os.environ.get("WHEELCUDA_TEST_WHEELS_VENV",
                                  Path(__file__).resolve().parents[1] / ".venv-wheels"))

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def _real_cuda_h() -> Path:
    """The real cuda.h: the CUDA 13 wheel in that environment first, then the system
    toolkit. None: fail under `make test` (WHEELCUDA_REQUIRE_INTEGRATION=1), else skip."""
    wheels = sorted(WHEELS_VENV.glob("lib/python*/site-packages/nvidia/cu13/include/cuda.h"))
    for path in [*wheels, Path("/usr/local/cuda/include/cuda.h")]:
        if path.is_file():
            return path
    message = "no real cuda.h (CUDA 13 wheel or /usr/local/cuda) here: run `make wheels-venv`"
    if os.environ.get("WHEELCUDA_REQUIRE_INTEGRATION"):
        pytest.fail(message)
    pytest.skip(message)


# -- stub_source: pure ------------------------------------------------------------------


def test_stub_source_defines_each_symbol_once_and_the_required_ones() -> None:
    text = stub.stub_source(["cuMemAlloc_v2", "cuMemAlloc", "cuMemAlloc_v2"])
    defined = re.findall(r"\bint (cu\w+)\(", text)
    assert defined == sorted({"cuMemAlloc", "cuMemAlloc_v2", *stub.REQUIRED})


def test_stub_source_returns_the_stub_library_error() -> None:
    text = stub.stub_source(["cuFoo"])
    assert "int cuFoo(void) { return STUB_ERROR; }" in text
    assert "#define STUB_ERROR 34 " in text


def test_stub_source_exports_with_default_visibility() -> None:
    """A -fvisibility=hidden in CFLAGS must not empty the library."""
    text = stub.stub_source(["cuFoo"])
    assert '__attribute__((visibility("default"))) int cuFoo(void)' in text


def test_stub_source_error_strings_explain_the_stub() -> None:
    text = stub.stub_source(["cuGetErrorName", "cuGetErrorString"])
    assert '*out = "CUDA_ERROR_STUB_LIBRARY"' in text
    assert "libcuda.so.1 of the NVIDIA driver" in text


@pytest.mark.parametrize("bad", ["", "cu Foo", "cuFoo();", "9cu"])
def test_stub_source_rejects_non_identifiers(bad: str) -> None:
    with pytest.raises(ValueError, match="not a C identifier"):
        stub.stub_source([bad])


# -- driver_symbols on fake headers -----------------------------------------------------

_GUARDED = "#ifndef CUDAAPI\n#define CUDAAPI\n#endif\n"
#: cuda.h 13.0's own form: no guard, so a -DCUDAAPI from outside would be overridden.
_UNGUARDED = "#ifdef _WIN32\n#define CUDAAPI __stdcall\n#else\n#define CUDAAPI\n#endif\n"

_FAKE_BODY = textwrap.dedent(
    """\
    typedef int CUresult;
    #if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
    #define cuLaunch cuLaunch_ptsz
    #endif
    #define cuFoo cuFoo_v2
    CUresult CUDAAPI cuFoo(int x);
    __attribute__((deprecated)) CUresult CUDAAPI cuBar(void);
    CUresult CUDAAPI cuLaunch(void);
    int CUDAAPI notDriverApi(void);
    typedef CUresult (*cuCallback)(void);
    static inline CUresult cuWrapper(void) { return cuBar(); }
    """
)


@needs_gcc
@pytest.mark.parametrize("guard", [_GUARDED, _UNGUARDED], ids=["guarded", "unguarded"])
def test_driver_symbols_keeps_names_before_and_after_macros(tmp_path: Path, guard: str) -> None:
    header = tmp_path / "cuda.h"
    header.write_text(guard + _FAKE_BODY)
    assert stub.driver_symbols(str(header), "gcc", ENV) == [
        "cuBar",
        "cuFoo",
        "cuFoo_v2",
        "cuLaunch",
        "cuLaunch_ptsz",
    ]


def test_driver_symbols_missing_header_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(ComponentError, match=re.escape(str(tmp_path / "cuda.h"))):
        stub.driver_symbols(str(tmp_path / "cuda.h"), "gcc", ENV)


@needs_gcc
def test_driver_symbols_refuses_a_header_without_driver_api(tmp_path: Path) -> None:
    header = tmp_path / "cuda.h"
    header.write_text("int main(void);\n")
    with pytest.raises(ComponentError, match="declares no CUDA driver API"):
        stub.driver_symbols(str(header), "gcc", ENV)


# -- build_stub failures ----------------------------------------------------------------


@pytest.mark.parametrize("cc", ["false", "no-such-compiler-wheelcuda"])
def test_build_stub_failing_compiler_raises_and_writes_nothing(tmp_path: Path, cc: str) -> None:
    header = tmp_path / "cuda.h"
    header.write_text(_GUARDED + _FAKE_BODY)
    out = tmp_path / "lib" / "libcuda.so"
    out.parent.mkdir()
    with pytest.raises(ToolError):
        stub.build_stub(str(header), str(out), cc, ENV)
    assert list(out.parent.iterdir()) == []


@needs_gcc
def test_build_stub_link_failure_keeps_the_old_file_and_no_scraps(tmp_path: Path) -> None:
    """A compiler that preprocesses, then writes half a library and fails."""
    cc = tmp_path / "half-cc"
    cc.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" -E "*) exec gcc "$@";; esac\n'
        'while [ "$1" != "-o" ]; do shift; done\n'
        'printf half > "$2"; exit 1\n'
    )
    cc.chmod(0o755)
    header = tmp_path / "cuda.h"
    header.write_text(_GUARDED + _FAKE_BODY)
    out = tmp_path / "lib" / "libcuda.so"
    out.parent.mkdir()
    out.write_text("old")
    with pytest.raises(ToolError, match="exit code 1"):
        stub.build_stub(str(header), str(out), str(cc), ENV)
    assert out.read_text() == "old"
    assert [p.name for p in out.parent.iterdir()] == ["libcuda.so"]


# -- build_stub on the real header ------------------------------------------------------


@pytest.fixture(scope="module")
def real_stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stub built once from the real cuda.h, as lib64/stubs/libcuda.so."""
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    header = _real_cuda_h()
    out = tmp_path_factory.mktemp("cuda_home") / "libcuda.so"
    stub.build_stub(str(header), str(out), "gcc", ENV)
    return out


def _tool(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


@pytest.mark.integration
def test_real_stub_is_named_libcuda_so_1_and_needs_nothing(real_stub: Path) -> None:
    dynamic = _tool("readelf", "-d", str(real_stub))
    assert "Library soname: [libcuda.so.1]" in dynamic
    assert "(NEEDED)" not in dynamic


@pytest.mark.integration
def test_real_stub_exports_plain_versioned_and_per_thread_names(real_stub: Path) -> None:
    exported = set(
        _tool("nm", "-D", "--defined-only", "--format=just-symbols", str(real_stub)).split()
    )
    wanted = {
        "cuInit",
        "cuDriverGetVersion",
        "cuGetProcAddress",
        "cuGetProcAddress_v2",
        "cuMemAlloc",
        "cuMemAlloc_v2",
        "cuLaunchKernel",
        "cuLaunchKernel_ptsz",
        "cuMemcpyHtoD_v2_ptds",
    }
    assert wanted <= exported
    assert "cuGetProcAddress_v2_ptsz" not in exported  # a static inline wrapper in cuda.h


_PROGRAM = textwrap.dedent(
    """\
    #include <stdio.h>
    #include <cuda.h>
    int main(void) {
        CUdeviceptr p;
        const char *why = "unset";
        CUresult r = cuInit(0);
        cuGetErrorString(r, &why);
        printf("%d %d %d %s\\n", (int)r, (int)cuMemAlloc(&p, 16),
               (int)cuLaunchKernel(0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0), why);
        return 0;
    }
    """
)


@pytest.mark.integration
@pytest.mark.parametrize("defines", [[], ["-DCUDA_API_PER_THREAD_DEFAULT_STREAM"]])
def test_program_links_against_stub_and_fails_cleanly(
    real_stub: Path, tmp_path: Path, defines: list[str]
) -> None:
    """`-lcuda` resolves; run against the stub, every call reports error 34."""
    libdir = tmp_path / "stubs"
    libdir.mkdir()
    shutil.copy(real_stub, libdir / "libcuda.so")
    os.symlink("libcuda.so", libdir / "libcuda.so.1")  # what the loader asks for: the SONAME
    (tmp_path / "prog.c").write_text(_PROGRAM)
    include = f"-I{_real_cuda_h().parent}"
    exe = tmp_path / "prog"
    _tool(
        "gcc", *defines, include, str(tmp_path / "prog.c"), f"-L{libdir}", "-lcuda", "-o", str(exe)
    )
    env = {**os.environ, "LD_LIBRARY_PATH": str(libdir)}
    run = subprocess.run([str(exe)], check=True, capture_output=True, text=True, env=env)
    assert run.stdout.startswith("34 34 34 CUDA driver stub library")
