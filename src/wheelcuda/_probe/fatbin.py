"""Which GPUs a built extension has machine code for, read from its own ELF (a
prebuilt wheel is judged by what it holds, not by its name).

A CUDA shared object carries its device code in the ``.nv_fatbin`` section: containers
(magic ``0xBA55ED50``, a 16-byte header) of entries, each with a header that names its
kind (2: an ELF cubin, SASS for one GPU; 1: PTX) and its arch (``90`` for sm_90), even
when the payload is compressed. Checked against cuobjdump ``--list-elf --list-ptx`` on
nvcc 13.0's output (tests/test_fatbin.py). Reads only; never raises on a bad file: what
cannot be read holds nothing.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

_FATBIN_MAGIC = 0xBA55ED50
_KIND_PTX, _KIND_ELF = 1, 2
_LIMIT = 1 << 31  # a .so this large is not read


@dataclass
class DeviceCode:
    """The archs with SASS (``sass``) and with PTX (``ptx``), as numbers (90: sm_90)."""

    sass: set[int] = field(default_factory=set)
    ptx: set[int] = field(default_factory=set)

    def update(self, other: DeviceCode) -> None:
        self.sass |= other.sass
        self.ptx |= other.ptx


def _section(data: bytes, wanted: bytes) -> tuple[int, int] | None:
    """(offset, size) of the ELF64 little-endian section named ``wanted``."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shentsize < 64 or shstrndx >= shnum or shoff + shnum * shentsize > len(data):
        return None
    strings = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 24)[0]
    for i in range(shnum):
        name, _type, _flags, _addr, offset, size = struct.unpack_from(
            "<IIQQQQ", data, shoff + i * shentsize)
        start = strings + name
        if data[start:start + len(wanted) + 1] == wanted + b"\x00":
            return (offset, size) if offset + size <= len(data) else None
    return None


def of_elf(data: bytes) -> DeviceCode:
    """The device code of one ELF file's ``.nv_fatbin`` section."""
    out = DeviceCode()
    try:
        found = _section(data, b".nv_fatbin")
        if found is None:
            return out
        pos, end = found[0], found[0] + found[1]
        while pos + 16 <= end:
            magic, _version, header, size = struct.unpack_from("<IHHQ", data, pos)
            if magic != _FATBIN_MAGIC or header < 16:
                break
            entry, stop = pos + header, min(pos + header + size, end)
            while entry + 32 <= stop:
                kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, entry)
                arch = struct.unpack_from("<I", data, entry + 28)[0]
                if entry_header < 32:
                    break
                if kind == _KIND_ELF:
                    out.sass.add(arch)
                elif kind == _KIND_PTX:
                    out.ptx.add(arch)
                entry += entry_header + payload
            pos = pos + header + size
            pos += -pos % 8  # containers are 8-byte aligned
    except struct.error:
        pass
    return out


def of_wheel(wheel: Path) -> DeviceCode:
    """What every shared object in a wheel that holds device code has for certain: the
    archs each of them holds (an arch one of them lacks fails there, whatever the others
    hold)."""
    found: list[DeviceCode] = []
    try:
        with zipfile.ZipFile(wheel) as z:
            for info in z.infolist():
                if ".so" in Path(info.filename).name and info.file_size < _LIMIT:
                    code = of_elf(z.read(info))
                    if code.sass or code.ptx:
                        found.append(code)
    except (OSError, zipfile.BadZipFile, zlib.error, NotImplementedError, RuntimeError,
            EOFError):
        return DeviceCode()
    if not found:
        return DeviceCode()
    return DeviceCode(set.intersection(*(c.sass for c in found)),
                      set.intersection(*(c.ptx for c in found)))
