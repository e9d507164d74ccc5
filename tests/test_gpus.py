"""GPU probing: NVML through a fake library, nvidia-smi through a fake script, pure parsers."""

from __future__ import annotations

import ctypes
import ctypes.util
import re
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from wheelcuda._context import Context
from wheelcuda._probe import gpus
from wheelcuda._probe.gpus import Gpu, GpuProbe

QUERY = "--query-gpu=index,name,compute_cap,driver_version"
RTX = "0, NVIDIA RTX PRO 6000 Blackwell Server Edition, 12.0, 580.95.05"
SMI_HEADER = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |
+-----------------------------------------------------------------------------------------+
"""


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test probes anew, with no switch or filter inherited from the caller."""
    monkeypatch.delenv("WHEELCUDA_NO_GPU_PROBE", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    gpus._all_gpus.cache_clear()
    yield
    gpus._all_gpus.cache_clear()


@pytest.fixture
def no_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make NVML fail as on a machine without libnvidia-ml, even where it exists."""

    def fail() -> None:
        raise gpus._ProbeError("NVML: no library in this test")

    monkeypatch.setattr(gpus, "_load_nvml", fail)


def fake_smi(folder: Path, monkeypatch: pytest.MonkeyPatch, query: str, code: int = 0) -> None:
    """Put a fake ``nvidia-smi`` alone on PATH: ``query`` for the CSV query, else a header."""
    script = folder / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = "{QUERY}" ]; then printf \'%s\' "{query}"; exit {code}; fi\n'
        f"printf '%s' '{SMI_HEADER}'\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(folder))


def test_parse_smi_csv_reads_the_fields() -> None:
    assert gpus.parse_smi_csv(RTX + "\n", "13.0") == (
        Gpu(0, "NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0", "580.95.05", "13.0"),
    )


def test_parse_smi_csv_several_lines_blank_lines_and_a_comma_in_a_name() -> None:
    text = "0, NVIDIA H200, 9.0, 580.159\n\n1, Odd, Name, 8.9, 580.159\n"
    found = gpus.parse_smi_csv(text)
    assert [(g.index, g.name, g.compute_capability) for g in found] == [
        (0, "NVIDIA H200", "9.0"),
        (1, "Odd, Name", "8.9"),
    ]
    assert found[0].driver_cuda is None


@pytest.mark.parametrize(
    "line", ["0, Tesla K80, [N/A], 470.1", "No devices were found", "x, a, 9.0, 1"]
)
def test_parse_smi_csv_rejects_lines_that_are_not_gpus(line: str) -> None:
    with pytest.raises(ValueError, match="unexpected line"):
        gpus.parse_smi_csv(line)


def test_parse_smi_cuda_version() -> None:
    assert gpus.parse_smi_cuda_version(SMI_HEADER) == "13.0"
    assert gpus.parse_smi_cuda_version("no table") is None


@pytest.mark.parametrize(("code", "text"), [(13000, "13.0"), (12080, "12.8"), (12090, "12.9")])
def test_cuda_version_text(code: int, text: str) -> None:
    assert gpus.cuda_version_text(code) == text


@pytest.mark.parametrize(
    ("driver", "toolkit", "runs"),
    [
        ("13.0", "13.0", True),
        ("13.0", "12.8", True),
        ("12.8", "13.0", False),
        ("13.0", "13.1", False),
        ("12.9", "12.8.93", True),
        ("13.0", "13", True),
        (None, "13.0", None),
        ("13.0", "thirteen", None),
    ],
)
def test_driver_runs(driver: str | None, toolkit: str, runs: bool | None) -> None:
    assert gpus.driver_runs(driver, toolkit) is runs


TWO = (Gpu(0, "A", "9.0", "580", "13.0"), Gpu(1, "B", "9.0", "580", "13.0"))


@pytest.mark.parametrize(
    ("value", "indices"),
    [
        (None, [0, 1]),
        ("1,0", [1, 0]),
        (" 1 ", [1]),
        ("0,5,1", [0]),  # like CUDA: the list ends at the first index with no device
        ("GPU-8b3c1f2e", [0, 1]),  # not the simple form: not filtered
    ],
)
def test_visible_gpus_filters_simple_indices(value: str | None, indices: list[int]) -> None:
    probe = gpus.visible_gpus(TWO, value)
    assert [gpu.index for gpu in probe.gpus] == indices
    assert probe.reason is None


@pytest.mark.parametrize("value", ["", "-1", "7"])
def test_visible_gpus_says_when_it_hides_them_all(value: str) -> None:
    assert gpus.visible_gpus(TWO, value) == GpuProbe(
        (), f"CUDA_VISIBLE_DEVICES={value!r} hides every GPU"
    )


def test_disabled_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WHEELCUDA_NO_GPU_PROBE", "1")
    monkeypatch.setattr(gpus, "_load_nvml", lambda: pytest.fail("probed anyway"))
    assert gpus.probe_gpus(Context.current()) == GpuProbe((), "disabled by WHEELCUDA_NO_GPU_PROBE")


@pytest.mark.usefixtures("no_nvml")
def test_falls_back_to_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_smi(tmp_path, monkeypatch, RTX + "\n1, NVIDIA H200, 9.0, 580.95.05\n")
    probe = gpus.probe_gpus(Context.current())
    assert probe.reason is None
    assert [(g.index, g.compute_capability, g.driver_cuda) for g in probe.gpus] == [
        (0, "12.0", "13.0"),
        (1, "9.0", "13.0"),
    ]
    assert gpus.probe_gpus(Context.current()) == probe  # cached per process


@pytest.mark.usefixtures("no_nvml")
def test_nvidia_smi_respects_cuda_visible_devices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_smi(tmp_path, monkeypatch, RTX + "\n1, NVIDIA H200, 9.0, 580.95.05\n")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert [gpu.name for gpu in gpus.probe_gpus(Context.current()).gpus] == ["NVIDIA H200"]


@pytest.mark.usefixtures("no_nvml")
def test_reason_when_nvidia_smi_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    probe = gpus.probe_gpus(Context.current())
    assert probe.gpus == ()
    assert probe.reason == "NVML: no library in this test; cannot run nvidia-smi: not found"


@pytest.mark.usefixtures("no_nvml")
def test_reason_when_nvidia_smi_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    words = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    fake_smi(tmp_path, monkeypatch, words, code=9)
    reason = gpus.probe_gpus(Context.current()).reason or ""
    assert reason.startswith("NVML: no library in this test; nvidia-smi ")
    assert "exit code 9" in reason
    assert words in reason


@pytest.mark.usefixtures("no_nvml")
def test_reason_when_nvidia_smi_lists_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_smi(tmp_path, monkeypatch, "")
    assert gpus.probe_gpus(Context.current()) == GpuProbe(
        (), "NVML: no library in this test; nvidia-smi: no devices"
    )


@pytest.mark.usefixtures("no_nvml")
def test_reason_when_nvidia_smi_prints_garbage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_smi(tmp_path, monkeypatch, "0, Tesla K80, [N/A], 470.1")
    assert "nvidia-smi: unexpected line '0, Tesla K80, [N/A], 470.1'" in (
        gpus.probe_gpus(Context.current()).reason or ""
    )


# NVML through a fake library: the ctypes calls and their error paths --------------


def _set(ref: Any, value: object) -> int:
    """Write through a ``ctypes.byref`` the way the C library would; NVML_SUCCESS."""
    ref._obj.value = value
    return 0


def fake_nvml(names: list[str], init: int = 0) -> types.SimpleNamespace:
    """An object answering the NVML calls gpus.py makes, for ``names`` devices."""
    calls: list[str] = []

    def error_string(code: int) -> bytes:
        return {9: b"Driver Not Loaded"}.get(code, b"Unknown Error")

    def name(handle: ctypes.c_void_p, buffer: Any, size: int) -> int:
        buffer.value = names[handle.value or 0].encode()
        return 0

    def capability(handle: ctypes.c_void_p, major: Any, minor: Any) -> int:
        _set(major, 9)
        _set(minor, handle.value or 0)
        return 0

    def shutdown() -> int:
        calls.append("shutdown")
        return 0

    def driver(buffer: Any, size: int) -> int:
        buffer.value = b"580.159"
        return 0

    return types.SimpleNamespace(
        calls=calls,
        nvmlInit_v2=lambda: init,
        nvmlShutdown=shutdown,
        nvmlErrorString=error_string,
        nvmlDeviceGetCount_v2=lambda ref: _set(ref, len(names)),
        nvmlSystemGetDriverVersion=driver,
        nvmlSystemGetCudaDriverVersion_v2=lambda ref: _set(ref, 13000),
        nvmlDeviceGetHandleByIndex_v2=lambda index, ref: _set(ref, index.value),
        nvmlDeviceGetName=name,
        nvmlDeviceGetCudaComputeCapability=capability,
    )


def test_nvml_reads_every_device(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = fake_nvml(["NVIDIA H200", "NVIDIA H100 80GB HBM3"])
    monkeypatch.setattr(gpus, "_load_nvml", lambda: nvml)
    assert gpus.probe_gpus(Context.current()) == GpuProbe(
        (
            Gpu(0, "NVIDIA H200", "9.0", "580.159", "13.0"),
            Gpu(1, "NVIDIA H100 80GB HBM3", "9.1", "580.159", "13.0"),
        ),
        None,
    )
    assert nvml.calls == ["shutdown"]


def test_nvml_error_falls_back_with_nvml_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gpus, "_load_nvml", lambda: fake_nvml([], init=9))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert gpus.probe_gpus(Context.current()).reason == (
        "NVML: nvmlInit_v2 returned 9 (Driver Not Loaded); cannot run nvidia-smi: not found"
    )


def test_nvml_without_devices_asks_nvidia_smi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nvml = fake_nvml([])
    monkeypatch.setattr(gpus, "_load_nvml", lambda: nvml)
    fake_smi(tmp_path, monkeypatch, RTX)
    assert [gpu.compute_capability for gpu in gpus.probe_gpus(Context.current()).gpus] == ["12.0"]
    assert nvml.calls == ["shutdown"]


def test_nvml_missing_entry_point_falls_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nvml = fake_nvml(["NVIDIA H200"])
    del nvml.nvmlSystemGetCudaDriverVersion_v2
    monkeypatch.setattr(gpus, "_load_nvml", lambda: nvml)
    monkeypatch.setenv("PATH", str(tmp_path))
    reason = gpus.probe_gpus(Context.current()).reason or ""
    assert re.match(r"NVML: .*nvmlSystemGetCudaDriverVersion_v2", reason)
    assert nvml.calls == ["shutdown"]


def test_real_loader_reports_a_missing_library(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpus, "_NVML_LIBRARY", "libwheelcuda-no-such-nvml.so.1")
    with pytest.raises(gpus._ProbeError, match=r"^NVML: .*libwheelcuda-no-such-nvml"):
        gpus._load_nvml()


@pytest.mark.gpu
@pytest.mark.skipif(ctypes.util.find_library("nvidia-ml") is None, reason="no libnvidia-ml")
def test_real_gpus_through_nvml_and_nvidia_smi(monkeypatch: pytest.MonkeyPatch) -> None:
    by_nvml = gpus.probe_gpus(Context.current())
    assert by_nvml.gpus, by_nvml.reason
    assert all(re.fullmatch(r"\d+\.\d+", gpu.compute_capability) for gpu in by_nvml.gpus)
    assert by_nvml.gpus[0].driver_cuda is not None
    gpus._all_gpus.cache_clear()
    monkeypatch.setattr(gpus, "_nvml_gpus", gpus._smi_gpus)  # the fallback, on the same GPUs
    assert gpus.probe_gpus(Context.current()) == by_nvml
