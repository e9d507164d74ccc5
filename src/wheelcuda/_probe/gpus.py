"""The NVIDIA GPUs this machine shows, and whether their driver runs a toolkit's code.

NVML comes first: it is a library call through ctypes, so no child process and no
parsing. Where NVML is missing or fails, ``nvidia-smi`` answers instead. Probing
never raises: with no GPU the answer is an empty probe with the reason, because a
machine without a GPU still builds extensions when the architectures are given.
"""

from __future__ import annotations

import csv
import ctypes
import functools
import re
from dataclasses import dataclass
from typing import Any

from .. import _proc as proc
from .._context import Context
from .._data import settings as registry
from .._rules.checks import parse_version
from ..errors import ToolError

_NVML_LIBRARY = "libnvidia-ml.so.1"
# Buffer sizes from nvml.h: NVML_DEVICE_NAME_V2_BUFFER_SIZE and
# NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE.
_NAME_SIZE = 96
_DRIVER_SIZE = 80
_SMI_QUERY = (
    "nvidia-smi",
    "--query-gpu=index,name,compute_cap,driver_version",
    "--format=csv,noheader",
)
# A wedged driver makes nvidia-smi hang; a probe must not hang with it.
_SMI_TIMEOUT = 30.0
_NO_PROBE = registry.NO_GPU_PROBE.name


@dataclass(frozen=True)
class Gpu:
    """One GPU. ``index`` is NVML's (and nvidia-smi's) index, in PCI bus order."""

    index: int
    name: str
    compute_capability: str  # "9.0", "12.0"
    driver_version: str  # "580.159"
    driver_cuda: str | None  # highest CUDA version the driver runs, "13.0"; None if unknown


@dataclass(frozen=True)
class GpuProbe:
    """What probing found; ``reason`` says why ``gpus`` is empty (None when it is not)."""

    gpus: tuple[Gpu, ...]
    reason: str | None


class _ProbeError(Exception):
    """One probing route failed; its message becomes part of ``GpuProbe.reason``."""


def probe_gpus(ctx: Context) -> GpuProbe:
    """The GPUs visible to CUDA programs started with ``ctx``'s environment.

    ``WHEELCUDA_NO_GPU_PROBE=1`` (``true``, ``yes``, ``on``: :meth:`Context.flag`) turns
    probing off (tests, and machines where the driver hangs). ``CUDA_VISIBLE_DEVICES``
    filters the list; see :func:`visible_gpus`.
    """
    if ctx.flag(_NO_PROBE):
        return GpuProbe((), f"disabled by {_NO_PROBE}")
    env = proc.child_environ(ctx.environ)
    return visible_gpus(_all_gpus(tuple(sorted(env.items()))), ctx.get("CUDA_VISIBLE_DEVICES"))


@functools.cache
def _all_gpus(env_items: tuple[tuple[str, str], ...]) -> tuple[Gpu, ...] | str:
    """Every GPU the driver shows, or why none: cached, since that does not change while
    wheelcuda runs."""
    try:
        return _nvml_gpus()
    except _ProbeError as nvml_error:
        try:
            return _smi_gpus(dict(env_items))
        except _ProbeError as smi_error:
            return f"{nvml_error}; {smi_error}"


def visible_gpus(gpus: tuple[Gpu, ...] | str, cuda_visible_devices: str | None) -> GpuProbe:
    """Pure: ``gpus`` as CUDA_VISIBLE_DEVICES leaves them, in the order it lists them.

    Only the simple form is understood: comma-separated integer indices. Like the
    CUDA runtime, the list ends at the first index that names no device ("-1" hides
    them all, "" too). Other forms (``GPU-<uuid>``, ``MIG-...``) leave the list
    unfiltered. The indices are taken as NVML's; CUDA numbers devices fastest first
    unless CUDA_DEVICE_ORDER=PCI_BUS_ID, which is the same order on machines whose
    GPUs are all alike.
    """
    if isinstance(gpus, str):  # none seen: the reason
        return GpuProbe((), gpus)
    if cuda_visible_devices is None:
        return GpuProbe(gpus, None)
    indices = _simple_indices(cuda_visible_devices)
    if indices is None:
        return GpuProbe(gpus, None)
    by_index = {gpu.index: gpu for gpu in gpus}
    chosen: list[Gpu] = []
    for index in indices:
        if index not in by_index:
            break
        chosen.append(by_index[index])
    reason = None if chosen else f"CUDA_VISIBLE_DEVICES={cuda_visible_devices!r} hides every GPU"
    return GpuProbe(tuple(chosen), reason)


def _simple_indices(value: str) -> tuple[int, ...] | None:
    """``"1,0"`` -> (1, 0); ``""`` -> (); None when an entry is not an integer."""
    entries = [entry.strip() for entry in value.split(",") if entry.strip()]
    if not all(re.fullmatch(r"-?\d+", entry) for entry in entries):
        return None
    return tuple(int(entry) for entry in entries)


def driver_runs(driver_cuda: str | None, toolkit: str) -> bool | None:
    """Pure: whether a driver for CUDA ``driver_cuda`` ("12.8") runs code from ``toolkit``.

    True iff the driver's (major, minor) is at least the toolkit's. CUDA's
    minor-version compatibility lets a 13.x toolkit's SASS run on any 13.y driver,
    but PTX JIT needs the newer driver, so the simple rule is the safe one. None
    when either version is unknown or unreadable.
    """
    driver = _major_minor(driver_cuda)
    wanted = _major_minor(toolkit)
    if driver is None or wanted is None:
        return None
    return driver >= wanted


def _major_minor(version: str | None) -> tuple[int, int] | None:
    """``"13.0.88"`` -> (13, 0), ``"13"`` -> (13, 0); None when it is not a version."""
    parsed = parse_version((version or "").strip())
    return (parsed.major, parsed.minor) if parsed else None


def cuda_version_text(code: int) -> str:
    """Pure: NVML's and the driver API's integer CUDA version, 13000 -> "13.0"."""
    return f"{code // 1000}.{code % 1000 // 10}"


# NVML through ctypes ---------------------------------------------------------------


def _load_nvml() -> Any:
    """Load NVML; a function of its own so that tests can make it fail."""
    try:
        return ctypes.CDLL(_NVML_LIBRARY)
    except OSError as exc:
        raise _ProbeError(f"NVML: {exc}") from exc


def _nvml_gpus() -> tuple[Gpu, ...]:
    """Every GPU NVML lists; raise :class:`_ProbeError` when NVML cannot answer."""
    nvml = _load_nvml()
    try:
        _check(nvml, nvml.nvmlInit_v2(), "nvmlInit_v2")
        try:
            return _nvml_read(nvml)
        finally:
            nvml.nvmlShutdown()
    except AttributeError as exc:  # a driver too old to export a _v2 entry point
        raise _ProbeError(f"NVML: {exc}") from exc


def _nvml_read(nvml: Any) -> tuple[Gpu, ...]:
    """Read the driver and each device from an initialised NVML."""
    count = ctypes.c_uint()
    _check(nvml, nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)), "nvmlDeviceGetCount_v2")
    if count.value == 0:
        raise _ProbeError("NVML: no devices")
    driver = ctypes.create_string_buffer(_DRIVER_SIZE)
    _check(
        nvml, nvml.nvmlSystemGetDriverVersion(driver, _DRIVER_SIZE), "nvmlSystemGetDriverVersion"
    )
    cuda = ctypes.c_int()
    known = nvml.nvmlSystemGetCudaDriverVersion_v2(ctypes.byref(cuda)) == 0
    driver_cuda = cuda_version_text(cuda.value) if known else None
    return tuple(
        _nvml_gpu(nvml, index, driver.value.decode(), driver_cuda) for index in range(count.value)
    )


def _nvml_gpu(nvml: Any, index: int, driver: str, driver_cuda: str | None) -> Gpu:
    """Name and compute capability of device ``index``."""
    handle = ctypes.c_void_p()
    code = nvml.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(index), ctypes.byref(handle))
    _check(nvml, code, "nvmlDeviceGetHandleByIndex_v2")
    name = ctypes.create_string_buffer(_NAME_SIZE)
    _check(nvml, nvml.nvmlDeviceGetName(handle, name, _NAME_SIZE), "nvmlDeviceGetName")
    major, minor = ctypes.c_int(), ctypes.c_int()
    code = nvml.nvmlDeviceGetCudaComputeCapability(handle, ctypes.byref(major), ctypes.byref(minor))
    _check(nvml, code, "nvmlDeviceGetCudaComputeCapability")
    return Gpu(index, name.value.decode(), f"{major.value}.{minor.value}", driver, driver_cuda)


def _check(nvml: Any, code: int, call: str) -> None:
    """Turn an NVML return code into :class:`_ProbeError` with NVML's own words."""
    if code == 0:
        return
    nvml.nvmlErrorString.restype = ctypes.c_char_p
    words = nvml.nvmlErrorString(code) or b"unknown error"
    raise _ProbeError(f"NVML: {call} returned {code} ({words.decode()})")


# nvidia-smi --------------------------------------------------------------------------


def _smi_gpus(env: dict[str, str]) -> tuple[Gpu, ...]:
    """Every GPU ``nvidia-smi`` lists; raise :class:`_ProbeError` when it cannot."""
    try:
        text = proc.capture(_SMI_QUERY, env=env, timeout=_SMI_TIMEOUT)
    except ToolError as exc:
        raise _ProbeError(" ".join(str(exc).split())) from exc
    try:
        gpus = parse_smi_csv(text, _smi_driver_cuda(env))
    except ValueError as exc:
        raise _ProbeError(f"nvidia-smi: {exc}") from exc
    if not gpus:
        raise _ProbeError("nvidia-smi: no devices")
    return gpus


def _smi_driver_cuda(env: dict[str, str]) -> str | None:
    """The driver's CUDA version from the plain ``nvidia-smi`` table; None if absent."""
    try:
        return parse_smi_cuda_version(proc.capture(["nvidia-smi"], env=env,
                                                   timeout=_SMI_TIMEOUT))
    except ToolError:
        return None  # optional: the GPUs themselves are already known


def parse_smi_cuda_version(text: str) -> str | None:
    """Pure: "13.0" from the ``CUDA Version: 13.0`` in nvidia-smi's table header."""
    match = re.search(r"CUDA Version:\s*(\d+\.\d+)", text)
    return match[1] if match else None


def parse_smi_csv(text: str, driver_cuda: str | None = None) -> tuple[Gpu, ...]:
    """Pure: the GPUs in ``--query-gpu=index,name,compute_cap,driver_version`` CSV.

    nvidia-smi does not quote names, so a comma inside a name splits it; the fields
    around the name are fixed, so the middle is joined back. Raise ValueError on a
    line that is not a GPU (an old nvidia-smi prints "[N/A]" for compute_cap).
    """
    rows = csv.reader(text.splitlines(), skipinitialspace=True)
    return tuple(_smi_row(row, driver_cuda) for row in rows if "".join(row).strip())


def _smi_row(row: list[str], driver_cuda: str | None) -> Gpu:
    """One CSV row as a :class:`Gpu`."""
    fields = [field.strip() for field in row]
    if len(fields) < 4 or not fields[0].isdigit() or not re.fullmatch(r"\d+\.\d+", fields[-2]):
        raise ValueError(f"unexpected line {', '.join(fields)!r}")
    name = ", ".join(fields[1:-2])
    return Gpu(int(fields[0]), name, fields[-2], fields[-1], driver_cuda)
