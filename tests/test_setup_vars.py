"""Reading a source's setup.py for the variables that make it build from source
instead of downloading a prebuilt wheel: _rules/setup_vars.py decides, _probe/setup_vars.py
reads the source."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import pytest

from wheelcuda._probe import setup_vars as probe
from wheelcuda._rules import arch, packages
from wheelcuda._rules import setup_vars as rules

# --- excerpts of real setup.py files (PyPI sdists, read for these tests) ---------------

# causal-conv1d 1.7.0, setup.py lines 43-46 and 261.
CAUSAL_CONV1D = '''
import os
FORCE_BUILD = os.getenv("CAUSAL_CONV1D_FORCE_BUILD", "FALSE") == "TRUE"
SKIP_CUDA_BUILD = os.getenv("CAUSAL_CONV1D_SKIP_CUDA_BUILD", "FALSE") == "TRUE"
# For CI, we want the option to build with C++11 ABI since the nvcr images use C++11 ABI
FORCE_CXX11_ABI = os.getenv("CAUSAL_CONV1D_FORCE_CXX11_ABI", "FALSE") == "TRUE"
def get_package_version():
    local_version = os.environ.get("CAUSAL_CONV1D_LOCAL_VERSION")
'''

# mamba-ssm 2.3.2.post1, setup.py lines 41-44 and 177-179: it also *writes*
# TORCH_CUDA_ARCH_LIST, which is not a read.
MAMBA_SSM = '''
import os
FORCE_BUILD = os.getenv("MAMBA_FORCE_BUILD", "FALSE") == "TRUE"
SKIP_CUDA_BUILD = os.getenv("MAMBA_SKIP_CUDA_BUILD", "FALSE") == "TRUE"
FORCE_CXX11_ABI = os.getenv("MAMBA_FORCE_CXX11_ABI", "FALSE") == "TRUE"
if bare_metal_version.major != torch_cuda_version.major:
    os.environ["TORCH_CUDA_ARCH_LIST"] = ""
'''

# flash-attn 2.8.3.post2, setup.py lines 40, 61-70, 342 and 514-526.
FLASH_ATTN = '''
import os
import functools
BUILD_TARGET = os.environ.get("BUILD_TARGET", "auto")
FORCE_BUILD = os.getenv("FLASH_ATTENTION_FORCE_BUILD", "FALSE") == "TRUE"
SKIP_CUDA_BUILD = os.getenv("FLASH_ATTENTION_SKIP_CUDA_BUILD", "FALSE") == "TRUE"
USE_TRITON_ROCM = os.getenv("FLASH_ATTENTION_TRITON_AMD_ENABLE", "FALSE") == "TRUE"
SKIP_CK_BUILD = os.getenv("FLASH_ATTENTION_SKIP_CK_BUILD", "TRUE") == "TRUE" if USE_TRITON_ROCM else False

@functools.lru_cache(maxsize=None)
def cuda_archs() -> str:
    return os.getenv("FLASH_ATTN_CUDA_ARCHS", "80;90;100;120").split(";")

archs = os.getenv("GPU_ARCHS", "native").split(";")

class NinjaBuildExtension(BuildExtension):
    def __init__(self, *args, **kwargs) -> None:
        if not os.environ.get("MAX_JOBS"):
            os.environ["MAX_JOBS"] = str(max_jobs)
'''  # noqa: E501 - a line as the package writes it

# byte_flux (github.com/bytedance/flux), setup.py: the variable's NAME is not the
# distribution's (it reads flash-attn's switch), and int() of a default.
BYTE_FLUX = '''
import os
enable_nvshmem = int(os.getenv("FLUX_SHM_USE_NVSHMEM", 0))
PACKAGE_NAME = "byte_flux"
FORCE_BUILD = os.getenv("FLASH_ATTENTION_FORCE_BUILD", "FALSE") == "TRUE"
USE_LOCAL_VERSION = int(os.getenv("FLUX_USE_LOCAL_VERSION", 0))
'''

# torch-scatter style (pyg): FORCE_CUDA compared with "1".
PYG = '''
import os
suffices = ['cpu', 'cuda'] if WITH_CUDA else ['cpu']
WITH_CUDA = torch.cuda.is_available() and CUDA_HOME is not None or os.getenv('FORCE_CUDA', '0') == '1'
'''  # noqa: E501

# torch-harmonics 0.8.1: its CUDA code only with a visible GPU or FORCE_CUDA_EXTENSION=1
# (the corpus built it CPU-only without a GPU).
HARMONICS = '''
import os
FORCE_CUDA_EXTENSION = os.getenv("FORCE_CUDA_EXTENSION", "0") == "1"
BUILD_CUDA = FORCE_CUDA_EXTENSION or (torch.cuda.is_available() and (CUDA_HOME is not None))
'''

ARCHS = arch.parse("8.6;12.0a")


@pytest.mark.parametrize(("text", "names"), [
    (CAUSAL_CONV1D, ["CAUSAL_CONV1D_FORCE_BUILD", "CAUSAL_CONV1D_SKIP_CUDA_BUILD",
                     "CAUSAL_CONV1D_FORCE_CXX11_ABI", "CAUSAL_CONV1D_LOCAL_VERSION"]),
    (MAMBA_SSM, ["MAMBA_FORCE_BUILD", "MAMBA_SKIP_CUDA_BUILD", "MAMBA_FORCE_CXX11_ABI"]),
    (FLASH_ATTN, ["BUILD_TARGET", "FLASH_ATTENTION_FORCE_BUILD",
                  "FLASH_ATTENTION_SKIP_CUDA_BUILD", "FLASH_ATTENTION_TRITON_AMD_ENABLE",
                  "FLASH_ATTENTION_SKIP_CK_BUILD", "FLASH_ATTN_CUDA_ARCHS", "GPU_ARCHS",
                  "MAX_JOBS"]),
    (BYTE_FLUX, ["FLUX_SHM_USE_NVSHMEM", "FLASH_ATTENTION_FORCE_BUILD",
                 "FLUX_USE_LOCAL_VERSION"]),
    (PYG, ["FORCE_CUDA"]),
], ids=["causal-conv1d", "mamba-ssm", "flash-attn", "byte-flux", "pyg"])
def test_real_setup_py_reads(text: str, names: list[str]) -> None:
    assert rules.variables_read(text) == names


@pytest.mark.parametrize(("text", "expected"), [
    (CAUSAL_CONV1D, {"CAUSAL_CONV1D_FORCE_BUILD": "TRUE",
                     "CAUSAL_CONV1D_SKIP_CUDA_BUILD": "FALSE"}),
    (MAMBA_SSM, {"MAMBA_FORCE_BUILD": "TRUE", "MAMBA_SKIP_CUDA_BUILD": "FALSE"}),
    # The default "80;90;100;120" shows the form; SKIP_CK_BUILD and GPU_ARCHS are ROCm's.
    (FLASH_ATTN, {"FLASH_ATTENTION_FORCE_BUILD": "TRUE",
                  "FLASH_ATTENTION_SKIP_CUDA_BUILD": "FALSE",
                  "FLASH_ATTN_CUDA_ARCHS": "86;120"}),
    (BYTE_FLUX, {"FLASH_ATTENTION_FORCE_BUILD": "TRUE"}),
    (PYG, {"FORCE_CUDA": "1"}),
    (HARMONICS, {"FORCE_CUDA_EXTENSION": "1"}),
], ids=["causal-conv1d", "mamba-ssm", "flash-attn", "byte-flux", "pyg", "torch-harmonics"])
def test_real_setup_py_builds_from_source(text: str, expected: dict[str, str]) -> None:
    assert rules.build_from_source(rules.reads(text), ARCHS) == expected
    # Plain names (no knowledge of the use) decide the same for these.
    assert rules.build_from_source(rules.variables_read(text), ARCHS) == expected


def test_the_recipe_table_agrees_for_flash_attn() -> None:
    """Same value as _rules/packages.py gives the recipe's arch_var."""
    recipe = packages.recipe_env(["flash-attn"], ARCHS, True)
    decided = rules.build_from_source(rules.reads(FLASH_ATTN), ARCHS)
    assert decided["FLASH_ATTN_CUDA_ARCHS"] == recipe["FLASH_ATTN_CUDA_ARCHS"]
    assert decided["FLASH_ATTENTION_FORCE_BUILD"] == recipe["FLASH_ATTENTION_FORCE_BUILD"]


# --- how a read is spelled (synthetic) -------------------------------------------------


@pytest.mark.parametrize(("text", "names"), [
    ('import os\nos.getenv("A")\nos.getenv("B", "d")\nos.getenv(key="C")', ["A", "B", "C"]),
    ('import os\nos.environ.get("A")\nos.environ["B"]\nos.environ.setdefault("C", "1")',
     ["A", "B", "C"]),
    ('import os\nif "A" in os.environ and "B" not in os.environ: pass', ["A", "B"]),
    ('from os import environ\nenviron.get("A")\nenviron["B"]\nx = "C" in environ',
     ["A", "B", "C"]),
    ('from os import getenv\ngetenv("A")', ["A"]),
    ('from os import getenv as ge, environ as env\nge("A")\nenv.get("B")', ["A", "B"]),
    ('import os as _os\n_os.getenv("A")\n_os.environ["B"]', ["A", "B"]),
    ('import os.path\nos.getenv("A")', ["A"]),
    ('import os\nE = os.environ\nE.get("A")', ["A"]),
    ('def f():\n    from os import getenv\n    return getenv("A")', ["A"]),
    # module-level string constants, concatenations and f-strings of them
    ('import os\nVAR = "A_FORCE_BUILD"\nos.getenv(VAR)', ["A_FORCE_BUILD"]),
    ('import os\nP = "PKG"\nV: str = P + "_FORCE_BUILD"\nos.environ.get(V, "FALSE")',
     ["PKG_FORCE_BUILD"]),
    ('import os\nP = "PKG"\nos.getenv(f"{P}_SKIP_CUDA_BUILD")', ["PKG_SKIP_CUDA_BUILD"]),
    ('import os\nos.environ.get("A", os.environ.get("B"))', ["A", "B"]),
    ('import os\nprint(f"{os.getenv(\'HIP_ARCHITECTURES\', \'native\')}")',
     ["HIP_ARCHITECTURES"]),
    # first read wins the order; a name read twice is listed once
    ('import os\nos.getenv("B")\nos.getenv("A")\nos.getenv("B")', ["B", "A"]),
])
def test_spellings(text: str, names: list[str]) -> None:
    assert rules.variables_read(text) == names


@pytest.mark.parametrize("text", [
    'import os\nos.environ["A"] = "1"\ndel os.environ["B"]',  # writes
    'import os\nos.environ.pop("A", None)',  # removes, does not consult
    'import os\nos.getenv(name)\nos.environ[f"{x}_FORCE_BUILD"]',  # not known statically
    'import os\nV = "A"\nV = "B"\nos.getenv(V)',  # rebound: no single value
    'import os\ndef f():\n    V = "A"\n    os.getenv(V)',  # only module-level constants
    'getenv("A")\nenviron["B"]',  # not the os module's
    'import sys\nsys.environ.get("A")',
    'import os\nos.getenv("A"',  # SyntaxError
    'import os\nos.getenv("A")\x00',  # NUL byte: ValueError from the parser
    'import os\nos.getenv(' + '"A" + ' * 50_000 + '"B")',  # RecursionError
    'import os\nx = ' + '(' * 1000 + ')' * 1000,  # too deeply nested to parse
    '',
])
def test_not_reads(text: str) -> None:
    assert rules.variables_read(text) == []


def test_layers_check_stays_clean() -> None:
    """The process-environment check greps src/ for the os module's spelled reads: the
    new modules must not trip it (they spell the names apart)."""
    src = Path(rules.__file__).read_text() + Path(probe.__file__).read_text()
    assert "os.environ" not in src and "os.getenv" not in src


# --- decisions -------------------------------------------------------------------------


def test_plain_names() -> None:
    names = ["X_FORCE_BUILD", "FORCE_BUILD", "X_SKIP_CUDA_BUILD", "FORCE_CUDA",
             "X_FORCE_CXX11_ABI", "X_LOCAL_VERSION", "MAX_JOBS", "GPU_ARCHS",
             "HIP_ARCHITECTURES", "FORCE_ONLY_CUDA"]
    assert rules.build_from_source(names, ARCHS) == {
        "X_FORCE_BUILD": "TRUE", "FORCE_BUILD": "TRUE", "X_SKIP_CUDA_BUILD": "FALSE",
        "FORCE_CUDA": "1"}


@pytest.mark.parametrize(("name", "expected"), [
    ("FLASH_ATTN_CUDA_ARCHS", "86;120"),
    ("MY_CUDA_ARCHITECTURES", "86;120"),
    ("CMAKE_CUDA_ARCHITECTURES", "86;120"),
    ("PKG_CUDA_ARCH_LIST", "8.6 12.0a"),  # torch's dotted form, as FLASHINFER_... takes
    ("PKG_ARCH_LIST", "8.6 12.0a"),
    ("TORCH_CUDA_ARCH_LIST", None),  # wheelcuda sets it itself
    ("CUDAARCHS", None),
    ("GPU_ARCHS", None),
])
def test_arch_variables_by_name(name: str, expected: str | None) -> None:
    assert rules.build_from_source([name], ARCHS).get(name) == expected
    assert rules.build_from_source([name], ()) == {}  # no archs: nothing to say


@pytest.mark.parametrize(("default", "expected"), [
    ("80;90;100;120", "86;120"),
    ("80,90", "86,120"),
    ("8.0;9.0", "8.6;12.0a"),
    ("8.0 9.0+PTX", "8.6 12.0a"),
    ("80-real;90", "86-real;120a-real"),
    ("native", "8.6 12.0a"),  # not a list: the name decides
])
def test_arch_form_follows_the_default(default: str, expected: str) -> None:
    text = f'import os\nos.getenv("PKG_CUDA_ARCH_LIST", "{default}")'
    assert rules.build_from_source(rules.reads(text), ARCHS) == {"PKG_CUDA_ARCH_LIST": expected}


def test_bare_numbers_merge_suffixes() -> None:
    """As _rules/packages.py: 9.0 and 9.0a are one number."""
    assert rules.arch_value("X_CUDA_ARCHS", arch.parse("9.0;9.0a;8.0+PTX")) == "80;90"


@pytest.mark.parametrize(("text", "expected"), [
    # the package's own spelling of "on"
    ('import os\nF = os.getenv("P_FORCE_BUILD", "0") == "1"', {"P_FORCE_BUILD": "1"}),
    ('import os\nF = os.getenv("P_FORCE_BUILD", "").lower() in ("yes", "true")',
     {"P_FORCE_BUILD": "yes"}),
    ('import os\nF = "1" == os.environ.get("P_FORCE_BUILD")', {"P_FORCE_BUILD": "1"}),
    ('import os\nF = int(os.getenv("P_FORCE_BUILD", 0))', {"P_FORCE_BUILD": "1"}),
    ('import os\nif os.getenv("P_FORCE_BUILD"): pass', {"P_FORCE_BUILD": "TRUE"}),
    ('import os\nON = "ON"\nF = os.getenv("P_FORCE_BUILD") == ON', {"P_FORCE_BUILD": "ON"}),
    ('import os\nF = os.environ.get("FORCE_CUDA", "0").strip().lower() in ("1", "true")',
     {"FORCE_CUDA": "1"}),
    # and of "off"
    ('import os\nS = os.getenv("P_SKIP_CUDA_BUILD", "0") == "1"', {"P_SKIP_CUDA_BUILD": "FALSE"}),
    ('import os\nS = os.getenv("P_SKIP_CUDA_BUILD", "TRUE") != "FALSE"',
     {"P_SKIP_CUDA_BUILD": "FALSE"}),
    ('import os\nS = os.getenv("P_SKIP_CUDA_BUILD", "1") != "0"', {"P_SKIP_CUDA_BUILD": "0"}),
    ('import os\nS = bool(int(os.getenv("P_SKIP_CUDA_BUILD", "0")))',
     {"P_SKIP_CUDA_BUILD": "0"}),
    ('import os\nS = os.getenv("P_SKIP_CUDA_BUILD") in ("1", "0")',
     {"P_SKIP_CUDA_BUILD": "0"}),
    # tested for truth: "FALSE" would be true, and unset already is off
    ('import os\nif os.getenv("P_SKIP_CUDA_BUILD"): pass', {}),
    ('import os\nS = not os.environ.get("P_SKIP_CUDA_BUILD")', {}),
    ('import os\nS = bool(os.environ.get("P_SKIP_CUDA_BUILD"))', {}),
    # "anything but TRUE skips": no value is known to build
    ('import os\nS = os.getenv("P_SKIP_CUDA_BUILD") != "TRUE"', {}),
    # presence alone: the plain decision
    ('import os\nS = "P_SKIP_CUDA_BUILD" in os.environ', {"P_SKIP_CUDA_BUILD": "FALSE"}),
])
def test_values_follow_the_code(text: str, expected: dict[str, str]) -> None:
    assert rules.build_from_source(rules.reads(text), ARCHS) == expected


def test_reads_record_the_use() -> None:
    (read,) = rules.reads('import os\nX = os.getenv("A", "0").lower() == "true"\n'
                          'Y = os.environ.get("A") != "no"\nZ = int(os.getenv("A", "7"))')
    assert read == rules.EnvRead("A", equals=("true",), differs=("no",), defaults=("0", "7"),
                                 as_int=True, tested=False)


# --- reading the source ----------------------------------------------------------------


TarMode = Literal["w:gz", "w:bz2", "w"]


def _tar(path: Path, members: dict[str, bytes], mode: TarMode = "w:gz") -> Path:
    with tarfile.open(path, mode) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _unchanged(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_folder(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text(CAUSAL_CONV1D)
    found = probe.read_setup_sources(str(tmp_path))
    assert found == probe.SetupSource(str(tmp_path / "setup.py"), CAUSAL_CONV1D)
    assert probe.wanted(str(tmp_path), ARCHS) == [
        ("CAUSAL_CONV1D_FORCE_BUILD", "TRUE", f"read from {tmp_path}/setup.py"),
        ("CAUSAL_CONV1D_SKIP_CUDA_BUILD", "FALSE", f"read from {tmp_path}/setup.py")]
    assert probe.wanted(str(tmp_path), ARCHS)[0].origin == f"read from {tmp_path}/setup.py"


def test_folder_without_setup_py(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    found = probe.read_setup_sources(str(tmp_path))
    assert found is not None and found.text is None and found.problem == "no setup.py"
    assert probe.wanted(str(tmp_path), ARCHS) == []


def test_folder_with_a_huge_or_unreadable_setup_py(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_bytes(b"#" * (probe.MAX_SETUP_BYTES + 1))
    found = probe.read_setup_sources(str(tmp_path))
    assert found is not None and found.text is None and "larger" in found.problem
    (tmp_path / "setup.py").unlink()
    (tmp_path / "setup.py").mkdir()  # a folder named setup.py
    found = probe.read_setup_sources(str(tmp_path))
    assert found is not None and found.text is None


def test_not_utf8_is_read_anyway(tmp_path: Path) -> None:
    text = b'# \xff\xfe latin-1\nimport os\nos.getenv("A_FORCE_BUILD")\n'
    (tmp_path / "setup.py").write_bytes(text)
    assert probe.wanted(str(tmp_path), ()) == [
        ("A_FORCE_BUILD", "TRUE", f"read from {tmp_path}/setup.py")]


@pytest.mark.parametrize("suffix", [".tar.gz", ".zip", ".tar.bz2", ".tar"])
def test_sdist(tmp_path: Path, suffix: str) -> None:
    members = {
        "flash_attn-2.8.3/PKG-INFO": b"Name: flash-attn\n",
        "flash_attn-2.8.3/hopper/setup.py": b'import os\nos.getenv("DEEP_FORCE_BUILD")\n',
        "flash_attn-2.8.3/setup.py": FLASH_ATTN.encode(),
    }
    path = tmp_path / "dl" / f"flash_attn-2.8.3{suffix}"
    path.parent.mkdir()
    if suffix == ".zip":
        _zip(path, members)
    else:
        modes: dict[str, TarMode] = {".tar.gz": "w:gz", ".tar.bz2": "w:bz2", ".tar": "w"}
        _tar(path, members, modes[suffix])
    before = _unchanged(tmp_path)
    found = probe.read_setup_sources(str(path))
    assert found == probe.SetupSource(f"{path}!flash_attn-2.8.3/setup.py", FLASH_ATTN)
    origin = f"read from {path}!flash_attn-2.8.3/setup.py"
    assert probe.wanted(str(path), ARCHS) == [
        ("FLASH_ATTENTION_FORCE_BUILD", "TRUE", origin),
        ("FLASH_ATTENTION_SKIP_CUDA_BUILD", "FALSE", origin),
        ("FLASH_ATTN_CUDA_ARCHS", "86;120", origin)]
    assert _unchanged(tmp_path) == before  # nothing extracted


@pytest.mark.parametrize("maker", [_tar, _zip])
@pytest.mark.parametrize("bad", ["../x/setup.py", "../setup.py", "/etc/setup.py",
                                 "./../setup.py", "a\\..\\setup.py"])
def test_climbing_names_are_never_the_setup_py(
        tmp_path: Path, maker: Callable[[Path, dict[str, bytes]], Path], bad: str) -> None:
    evil = b'import os\nos.getenv("EVIL_FORCE_BUILD")\n'
    path = tmp_path / ("pkg-1.0.tar.gz" if maker is _tar else "pkg-1.0.zip")
    maker(path, {bad: evil})
    found = probe.read_setup_sources(str(path))
    assert found is not None and found.text is None
    assert found.problem == "no setup.py in the archive"
    good = b'import os\nos.getenv("GOOD_FORCE_BUILD")\n'
    maker(path, {bad: evil, "pkg-1.0/setup.py": good})
    assert [w.name for w in probe.wanted(str(path), ())] == ["GOOD_FORCE_BUILD"]
    assert not (tmp_path.parent / "x").exists()
    assert not (tmp_path.parent / "setup.py").exists()


def test_top_folder_setup_py_wins_over_a_bare_one(tmp_path: Path) -> None:
    path = _tar(tmp_path / "p-1.tar.gz", {
        "setup.py": b'import os\nos.getenv("BARE_FORCE_BUILD")\n',
        "p-1/setup.py": b'import os\nos.getenv("TOP_FORCE_BUILD")\n'})
    assert [w.name for w in probe.wanted(str(path), ())] == ["TOP_FORCE_BUILD"]
    path = _tar(tmp_path / "q-1.tar.gz", {"setup.py": b'import os\nos.getenv("B_FORCE_BUILD")'})
    assert [w.name for w in probe.wanted(str(path), ())] == ["B_FORCE_BUILD"]


def test_huge_member_is_not_read(tmp_path: Path) -> None:
    huge = b"#" * (probe.MAX_SETUP_BYTES + 1)
    for path in (_tar(tmp_path / "p-1.tar.gz", {"p-1/setup.py": huge}),
                 _zip(tmp_path / "p-1.zip", {"p-1/setup.py": huge})):
        found = probe.read_setup_sources(str(path))
        assert found is not None and found.text is None and "larger" in found.problem


def test_zip_lying_about_its_size(tmp_path: Path) -> None:
    """A member whose header claims a small size is still read no further than the cap."""
    path = _zip(tmp_path / "p-1.zip", {"p-1/setup.py": b"#" * (probe.MAX_SETUP_BYTES + 10)})
    original = zipfile.ZipFile.infolist

    def lying(self: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
        infos = original(self)
        for info in infos:
            info.file_size = 10
        return infos

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(zipfile.ZipFile, "infolist", lying)
        found = probe.read_setup_sources(str(path))
    assert found is not None and found.text is None  # larger than the cap, or a CRC error


def test_links_and_folders_named_setup_py_are_not_read(tmp_path: Path) -> None:
    path = tmp_path / "p-1.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        link = tarfile.TarInfo("p-1/setup.py")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    found = probe.read_setup_sources(str(path))
    assert found is not None and found.text is None and "regular" in found.problem
    path = tmp_path / "p-1.zip"
    with zipfile.ZipFile(path, "w") as archive:
        info = zipfile.ZipInfo("p-1/setup.py")
        info.external_attr = (0o120777 << 16)  # a symlink, as zip tools store one
        archive.writestr(info, "/etc/passwd")
    found = probe.read_setup_sources(str(path))
    assert found is not None and found.text is None and "regular" in found.problem


@pytest.mark.parametrize(("name", "data"), [
    ("p-1.tar.gz", b"not an archive at all"),
    ("p-1.zip", b"PK\x03\x04 truncated"),
    ("p-1.tar.gz", b""),
    ("p-1.tar.bz2", b"BZh91AY&SY garbage"),
])
def test_broken_archives_do_not_raise(tmp_path: Path, name: str, data: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    found = probe.read_setup_sources(str(path))
    assert found is not None and found.text is None
    assert found.problem.startswith(("cannot read the archive", "no setup.py"))
    assert probe.wanted(str(path), ARCHS) == []


def test_truncated_tar_gz(tmp_path: Path) -> None:
    whole = _tar(tmp_path / "p-1.tar.gz", {"p-1/README": os.urandom(200_000),
                                           "p-1/setup.py": CAUSAL_CONV1D.encode()})
    whole.write_bytes(whole.read_bytes()[:50_000])
    found = probe.read_setup_sources(str(whole))
    assert found is not None and found.text is None


def test_unreadable_archive(tmp_path: Path) -> None:
    path = tmp_path / "p-1.tar.gz"
    path.mkdir()  # a folder named like an sdist is a folder
    assert probe.read_setup_sources(str(path)) == probe.SetupSource(str(path), None,
                                                                    "no setup.py")


@pytest.mark.parametrize("spec", ["causal-conv1d==1.7.0", "flash-attn", "mamba-ssm[x]>=2",
                                  "https://example.invalid/p-1.tar.gz",
                                  "p @ https://example.invalid/p-1.zip",
                                  "git+https://example.invalid/x.git"])
def test_requirements_have_nothing_local(spec: str) -> None:
    assert probe.read_setup_sources(spec) is None
    assert probe.wanted(spec, ARCHS) == []


def test_from_source_keeps_the_problem_apart(tmp_path: Path) -> None:
    assert probe.from_source(probe.SetupSource("x", None, "no setup.py"), ARCHS) == []
    source = probe.SetupSource("/s/setup.py", 'import os\nos.getenv("FORCE_CUDA")')
    assert probe.from_source(source, ARCHS) == [("FORCE_CUDA", "1", "read from /s/setup.py")]


def test_missing_sdist(tmp_path: Path) -> None:
    spec = str(tmp_path / "gone-1.0.tar.gz")
    assert probe.read_setup_sources(spec) == probe.SetupSource(spec, None, "no such file")


# --- a requirement's setup.py, read from its sdist on the index -------------------------

# chamferdist 1.0.3, setup.py lines 20-21: CUDA only with a GPU or FORCE_CUDA=1, so
# `uv-config chamferdist` then `uv add chamferdist` built it CPU-only on a machine
# without one until the name's sdist was read.
CHAMFERDIST = '''
import os
force_cuda = os.getenv("FORCE_CUDA", "0") == "1"
'''


def test_a_name_is_read_from_its_sdist_on_an_http_index(tmp_path: Path) -> None:
    from tests import pypi_server  # noqa: PLC0415

    old = _tar(tmp_path / "chamferdist-1.0.2.tar.gz",
               {"chamferdist-1.0.2/setup.py": b'import os\nos.getenv("OLD_FORCE_BUILD")\n'})
    new = _tar(tmp_path / "chamferdist-1.0.3.tar.gz",
               {"chamferdist-1.0.3/setup.py": CHAMFERDIST.encode()})
    page = (b"<a href='/f/chamferdist-1.0.2.tar.gz'>chamferdist-1.0.2.tar.gz</a>"
            b"<a href='/f/chamferdist-1.0.3.tar.gz'>chamferdist-1.0.3.tar.gz</a>"
            b"<a href='/f/chamferdist-1.0.4-py3-none-any.whl'>"
            b"chamferdist-1.0.4-py3-none-any.whl</a>")
    routes = {"/simple/chamferdist/": pypi_server.Page(page),
              "/f/chamferdist-1.0.2.tar.gz": pypi_server.Page(old.read_bytes()),
              "/f/chamferdist-1.0.3.tar.gz": pypi_server.Page(new.read_bytes())}
    before = _unchanged(tmp_path)
    with pypi_server.pages(routes) as served:
        places = [(f"{served.url}/simple", False)]
        origin = f"read from {served.url}/f/chamferdist-1.0.3.tar.gz!chamferdist-1.0.3/setup.py"
        # the newest release's sdist (a wheel of a later one is not read), or the pinned one
        assert probe.wanted("chamferdist", ARCHS, places) == [("FORCE_CUDA", "1", origin)]
        assert probe.wanted("Chamferdist>=1", ARCHS, places) == [("FORCE_CUDA", "1", origin)]
        assert [w.name for w in probe.wanted("chamferdist==1.0.2", ARCHS, places)] == \
            ["OLD_FORCE_BUILD"]
        # no such release, no such project, a URL: nothing, and nothing raised
        assert probe.wanted("chamferdist==9", ARCHS, places) == []
        assert probe.wanted("nothere", ARCHS, places) == []
        assert probe.from_index("p @ https://example.invalid/p-1.tar.gz", places) is None
        # the first place that has it wins; one that cannot be reached is passed over
        unreachable = ("http://127.0.0.1:9/simple", False)
        assert [w.name for w in probe.wanted("chamferdist", ARCHS, [unreachable, *places])] \
            == ["FORCE_CUDA"]
        # a file it names that the server does not serve: said, not raised
        served.routes.pop("/f/chamferdist-1.0.3.tar.gz")
        found = probe.from_index("chamferdist", places)
        assert found is not None and found.text is None and "HTTP 404" in found.problem
    assert _unchanged(tmp_path) == before  # nothing written


def test_a_name_is_read_from_a_find_links_folder(tmp_path: Path) -> None:
    links = tmp_path / "links"
    links.mkdir()
    _zip(links / "chamferdist-1.0.3.zip", {"chamferdist-1.0.3/setup.py": CHAMFERDIST.encode()})
    (links / "chamferdist-1.0.3.tar.gz").write_bytes(b"broken")  # the first listed wins
    found = probe.from_index("chamferdist==1.0.3", [(str(links), True)])
    assert found is not None and found.text is None and "cannot read" in found.problem
    (links / "chamferdist-1.0.3.tar.gz").unlink()
    assert [w.name for w in probe.wanted("chamferdist==1.0.3", ARCHS, [(str(links), True)])] \
        == ["FORCE_CUDA"]


def test_one_plan_reads_a_pinned_name_s_page_once(tmp_path: Path) -> None:
    """``install NAME==V`` asks the index for the sdist's sha256 (the key) and for the
    sdist (its setup.py): one plan's :class:`index.Pages` reads the page once; a new one
    reads it again (the index may have changed)."""
    from tests import pypi_server  # noqa: PLC0415
    from wheelcuda._context import Context  # noqa: PLC0415
    from wheelcuda._probe import index, uvforms  # noqa: PLC0415

    sdist = _tar(tmp_path / "chamferdist-1.0.3.tar.gz",
                 {"chamferdist-1.0.3/setup.py": CHAMFERDIST.encode()})
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    page = (f"<a href='/f/chamferdist-1.0.3.tar.gz#sha256={digest}'>"
            "chamferdist-1.0.3.tar.gz</a>").encode()
    routes = {"/simple/chamferdist/": pypi_server.Page(page),
              "/f/chamferdist-1.0.3.tar.gz": pypi_server.Page(sdist.read_bytes())}
    ctx = Context((), str(tmp_path), "/usr/bin/python3")
    with pypi_server.pages(routes) as served:
        place = uvforms.Place(f"{served.url}/simple")
        for run in (1, 2):
            pages = index.Pages()
            assert uvforms.pinned_source("chamferdist==1.0.3", ctx, [place], pages) == \
                f"sha256:{digest}"
            assert [w.name for w in probe.wanted("chamferdist==1.0.3", ARCHS,
                                                 [(place.url, False)], pages)] == ["FORCE_CUDA"]
            read = [path for path, _ in served.seen if path == "/simple/chamferdist/"]
            assert len(read) == run
        # an index that does not answer is asked once too, and its error said each time
        pages = index.Pages()
        for _ in (1, 2):
            with pytest.raises(index.IndexUnreadable):
                pages.files(f"{served.url}/simple", "nothere")
        assert [p for p, _ in served.seen].count("/simple/nothere/") == 1
