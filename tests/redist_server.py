"""A mirror of NVIDIA's redistributable archives, made at test time, and a 127.0.0.1 HTTP
server over it that can misbehave on request.

The mirror is laid out exactly as NVIDIA's (docs/facts.md): ``redistrib_<label>.json`` beside
``<comp>/linux-x86_64/<comp>-linux-x86_64-<ver>-archive.tar.xz``, each archive holding one
top folder named like the file. Archives are xz at preset 0: the real CUDA 13 files are
large and this machine has two cores.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import tarfile
import threading
import time
import urllib.parse
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests import fakes
from wheelcuda._data import catalog

PLATFORM = "linux-x86_64"


# -- archives and manifests ---------------------------------------------------------------

@dataclass(frozen=True)
class Entry:
    """One member under the archive's top folder: a file (``data``), a folder, a link
    (``target``), or a fifo/device (``kind`` "fifo", "chr")."""

    name: str
    kind: str = "file"
    data: bytes = b""
    target: str = ""
    mode: int = 0o644
    #: a file on disk to take the data from (instead of ``data``), cut to ``keep`` bytes
    path: Path | None = None
    keep: int | None = None


_TYPES = {"file": tarfile.REGTYPE, "dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE,
          "hardlink": tarfile.LNKTYPE, "fifo": tarfile.FIFOTYPE, "chr": tarfile.CHRTYPE}


def _inside(top: str, name: str) -> str:
    """``name`` under the top folder, unless it is meant to be outside (tests of that)."""
    return name if name.startswith(("/", "..", top)) else f"{top}/{name}"


def _member(top: str, entry: Entry) -> tuple[tarfile.TarInfo, io.IOBase | None]:
    info = tarfile.TarInfo(_inside(top, entry.name))
    info.type = _TYPES[entry.kind]
    info.mode = 0o755 if entry.kind == "dir" else entry.mode
    info.mtime = 1_700_000_000
    if entry.kind == "symlink":
        info.linkname = entry.target
    elif entry.kind == "hardlink":  # tar names the member linked to by its full name
        info.linkname = _inside(top, entry.target)
    if entry.kind != "file":
        return info, None
    if entry.path is not None:
        size = entry.path.stat().st_size
        info.size = size if entry.keep is None else min(size, entry.keep)
        return info, open(entry.path, "rb")
    info.size = len(entry.data)
    return info, io.BytesIO(entry.data)


def archive(mirror: Path, comp: str, version: str, entries: Iterable[Entry],
            license_text: str = "NVIDIA Software License (test copy)\n") -> dict[str, str]:
    """Write ``<comp>/<platform>/<comp>-<platform>-<ver>-archive.tar.xz`` under
    ``mirror`` and return its manifest entry (``size`` a string, as NVIDIA's)."""
    top = f"{comp}-{PLATFORM}-{version}-archive"
    rel = f"{comp}/{PLATFORM}/{top}.tar.xz"
    path = mirror / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:xz", preset=0) as tar:
        tar.addfile(_member(top, Entry(top, "dir"))[0])
        for entry in [*entries, Entry("LICENSE", data=license_text.encode())]:
            info, data = _member(top, entry)
            try:
                tar.addfile(info, data)
            finally:
                if data is not None:
                    data.close()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    md5 = hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()
    return {"relative_path": rel, "sha256": digest, "md5": md5,
            "size": str(path.stat().st_size)}


def manifest(mirror: Path, label: str, components: dict[str, tuple[str, dict[str, str]]]
             ) -> Path:
    """``redistrib_<label>.json``: components as ``{name: (version, platform entry)}``."""
    doc: dict[str, object] = {"release_date": "2025-03-06", "release_label": label,
                              "release_product": "cuda"}
    for name, (version, entry) in components.items():
        doc[name] = {"name": f"CUDA {name}", "license": "CUDA Toolkit",
                     "license_path": f"{name}/LICENSE.txt", "version": version,
                     PLATFORM: entry}
    path = mirror / f"redistrib_{label}.json"
    path.write_text(json.dumps(doc, indent=4) + "\n")
    return path


def _catalog_entries(comp: catalog.Component, major: int, version: str,
                     prefix: str = "") -> list[Entry]:
    """The catalog's files of ``comp`` as fakes.py makes them (a fake nvcc that answers
    --version), less the ``prefix`` they have under the component folder."""
    out = []
    for rel in comp.files[major]:
        if not rel.startswith(prefix):
            continue
        name = rel[len(prefix):]
        if rel == "bin/nvcc":
            release = ".".join(version.split(".")[:2])
            out.append(Entry(name, data=fakes.FAKE_NVCC.format(release=release,
                                                               version=version).encode(),
                             mode=0o755))
        elif rel.endswith("host_config.h"):
            out.append(Entry(name, data=fakes.HOST_CONFIG.encode()))
        else:
            out.append(Entry(name, data=f"{rel} {version}\n".encode(),
                             mode=0o755 if rel.startswith(("bin/", "nvvm/bin/")) else 0o644))
    return out


def cu12_mirror(mirror: Path, label: str = "12.8.1", *, nvcc: str = "12.8.93",
                runtime: str = "12.8.90", cccl: str = "12.8.90", padding: int = 0,
                extra: dict[str, list[Entry]] | None = None) -> Path:
    """A CUDA 12 release as NVIDIA lays it out: cuda_nvcc holds nvcc, nvvm/ and crt/;
    libraries under lib/ with their links. ``padding`` random bytes in bin/ptxas make
    the nvcc archive that large (for slow downloads); ``extra`` adds members."""
    extra = extra or {}
    nvcc_entries = [e for c in (catalog.NVCC, catalog.NVVM, catalog.CRT)
                    for e in _catalog_entries(c, 12, nvcc)]
    if padding:
        nvcc_entries = [e for e in nvcc_entries if e.name != "bin/ptxas"]
        nvcc_entries.append(Entry("bin/ptxas", data=os.urandom(padding), mode=0o755))
    nvcc_entries += [Entry("nvvm/lib64/libnvvm.so.4.0.0", data=b"libnvvm"),
                     Entry("nvvm/lib64/libnvvm.so.4", "symlink", target="libnvvm.so.4.0.0"),
                     Entry("bin/crt", "dir"), Entry("bin/crt/link.stub", data=b"stub")]
    runtime_entries = [
        Entry("include/cuda_runtime.h", data=b"/* cuda_runtime.h */\n"),
        Entry("include/cuda.h", data=fakes.CUDA_H.encode()),
        Entry(f"lib/libcudart.so.{runtime}", data=b"\x7fELF libcudart", mode=0o755),
        Entry("lib/libcudart.so.12", "symlink", target=f"libcudart.so.{runtime}"),
        Entry("lib/libcudart.so", "symlink", target="libcudart.so.12"),
        Entry("lib/libcudart_static.a", data=b"!<arch>\n"),
        Entry("lib/libcudadevrt.a", data=b"!<arch>\n"),
        Entry("lib/stubs/libcuda.so", data=b"\x7fELF stub", mode=0o755),
    ]
    cccl_entries = [*_catalog_entries(catalog.CCCL, 12, cccl),
                    Entry("include/thrust/version.h", data=b"#define THRUST_VERSION 200800\n"),
                    Entry("lib/cmake/cub/cub-config.cmake", data=b"# cub\n")]
    comps = {"cuda_nvcc": (nvcc, nvcc_entries + extra.get("cuda_nvcc", [])),
             "cuda_cudart": (runtime, runtime_entries + extra.get("cuda_cudart", [])),
             "cuda_cccl": (cccl, cccl_entries + extra.get("cuda_cccl", []))}
    listed = {name: (version, archive(mirror, name, version, entries))
              for name, (version, entries) in comps.items()}
    # an unrelated component, as real manifests list dozens
    listed["cuda_nvprof"] = (nvcc, archive(mirror, "cuda_nvprof", nvcc, []))
    return manifest(mirror, label, listed)


#: Which wheel of the CUDA 13 set goes into which archive, as NVIDIA splits them.
CU13_WHEELS = {"cuda_nvcc": "nvidia_cuda_nvcc", "cuda_crt": "nvidia_cuda_crt",
               "libnvvm": "nvidia_nvvm", "cuda_cudart": "nvidia_cuda_runtime",
               "cuda_cccl": "nvidia_cuda_cccl"}


def _record(site: Path, dist: str) -> tuple[str, list[str]]:
    """(version, files under nvidia/cu13/ relative to it) from the wheel's RECORD."""
    [info] = site.glob(f"{dist}-*.dist-info")
    version = info.name[len(dist) + 1:-len(".dist-info")]
    files = []
    for line in (info / "RECORD").read_text().splitlines():
        path = line.split(",", 1)[0]
        if path.startswith("nvidia/cu13/"):
            files.append(path[len("nvidia/cu13/"):])
    return version, files


def cu13_mirror(mirror: Path, site: Path, label: str = "13.0.2", *,
                keep: int | None = 64 * 1024, whole: Iterable[str] = ("bin/nvcc",)) -> Path:
    """A CUDA 13 release made from the real CUDA 13 wheels in ``site``: each wheel's
    files (its RECORD) become the archive NVIDIA ships them in. Files larger than
    ``keep`` bytes are cut to that size, except ``whole`` (None keeps every byte)."""
    whole = set(whole)
    listed = {}
    for comp, dist in CU13_WHEELS.items():
        version, files = _record(site, dist)
        entries = []
        for rel in files:
            path = site / "nvidia/cu13" / rel
            mode = 0o755 if os.access(path, os.X_OK) else 0o644
            cut = None if rel in whole else keep
            entries.append(Entry(rel, path=path, keep=cut, mode=mode))
        listed[comp] = (version, archive(mirror, comp, version, entries))
    return manifest(mirror, label, listed)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- the server ---------------------------------------------------------------------------

@dataclass
class Server:
    """``url`` serves ``folder``; ``faults[relative path]`` makes one path misbehave:
    "404", "500", "corrupt" (one byte flipped), "truncate" (half of each answer, then
    the connection closes), "truncate-once" (the first answer only), "ignore-range"
    (always the whole file), "slow" (``delay`` seconds per 64 KB)."""

    folder: Path
    faults: dict[str, str] = field(default_factory=dict)
    delay: float = 0.02
    requests: list[tuple[str, str | None]] = field(default_factory=list)
    url: str = ""
    _httpd: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, rel: str) -> int:
        with self._lock:
            return sum(1 for path, _ in self.requests if path == rel)

    def ranges(self, rel: str) -> list[str | None]:
        with self._lock:
            return [r for path, r in self.requests if path == rel]


def _handler(server: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            del format, args  # quiet

        def do_GET(self) -> None:
            rel = urllib.parse.unquote(self.path.split("?", 1)[0]).lstrip("/")
            asked = self.headers.get("Range")
            with server._lock:
                seen = sum(1 for p, _ in server.requests if p == rel)
                server.requests.append((rel, asked))
            fault = server.faults.get(rel, "")
            path = server.folder / rel
            if fault in ("404", "500") or not path.is_file():
                self.send_error(int(fault or 404))
                return
            body = path.read_bytes()
            if fault == "corrupt":
                middle = len(body) // 2
                body = body[:middle] + bytes([body[middle] ^ 0xFF]) + body[middle + 1:]
            start = 0
            m = re.fullmatch(r"bytes=(\d+)-", asked or "")
            if m and fault != "ignore-range":
                start = int(m.group(1))
                if start >= len(body):
                    self.send_error(416)
                    return
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            else:
                self.send_response(200)
            self.send_header("Content-Length", str(len(body) - start))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            payload = body[start:]
            if fault == "truncate" or (fault == "truncate-once" and seen == 0):
                payload = payload[:len(payload) // 2]
                self.close_connection = True
            self._send(payload, slow=fault == "slow")

        def _send(self, payload: bytes, *, slow: bool) -> None:
            step = 64 * 1024
            try:
                for i in range(0, len(payload), step):
                    self.wfile.write(payload[i:i + step])
                    if slow:
                        self.wfile.flush()
                        time.sleep(server.delay)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client went away (a killed download)

    return Handler


@dataclass
class _Running:
    server: Server
    thread: threading.Thread


def _start(server: Server) -> _Running:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(server))
    httpd.daemon_threads = True
    server._httpd = httpd
    server.url = f"http://127.0.0.1:{httpd.server_address[1]}/"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    return _Running(server, thread)


@contextlib.contextmanager
def serve(folder: Path) -> Iterator[Server]:
    """A running server over ``folder`` for the length of a fixture."""
    running = _start(Server(folder))
    try:
        yield running.server
    finally:
        assert running.server._httpd is not None
        running.server._httpd.shutdown()
        running.server._httpd.server_close()
        running.thread.join(5)
