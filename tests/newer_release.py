"""What PyPI serves today beside the CUDA 13.0 parts, offline: the real 13.0 wheels of the
runtime, nvvm and crt repacked as release 13.5.37 (PyPI's newest on 2026-11-30).

nvidia-cuda-nvcc 13.0.88 requires nvvm, crt and runtime with no version bound, so an
installer that sees 13.5.37 takes it unless told otherwise. The repacked runtime says
``CUDART_VERSION 13050`` in its headers, as the real 13.5 one does: CCCL then stops every
compile with nvcc 13.0 ("CUDA compiler and CUDA toolkit headers are incompatible"), which
is what a user online met. Served from 127.0.0.1 as a find-links page.
"""

from __future__ import annotations

import base64
import csv
import functools
import hashlib
import http.server
import io
import re
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

NEWER = "13.5.37"
#: (distribution file prefix, its 13.0 version) of the parts nvcc leaves unbounded
PARTS = (("nvidia_cuda_runtime", "13.0.96"), ("nvidia_nvvm", "13.0.88"),
         ("nvidia_cuda_crt", "13.0.88"))


def _patch(name: str, data: bytes) -> bytes:
    if name.endswith("include/cuda_runtime_api.h"):
        return re.sub(rb"#define CUDART_VERSION\s+13000", b"#define CUDART_VERSION  13050",
                      data)
    if name.endswith("include/cuda.h"):
        return re.sub(rb"#define CUDA_VERSION\s+13000", b"#define CUDA_VERSION 13050", data)
    return data


def repack(wheel: Path, out: Path, version: str = NEWER) -> Path:
    """``wheel`` as release ``version``: its dist-info renamed, METADATA's version and the
    CUDA version macros changed, RECORD written anew."""
    dist, old = wheel.name.split("-")[:2]
    target = out / wheel.name.replace(f"-{old}-", f"-{version}-", 1)
    rows = []
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for info in src.infolist():
            name = info.filename.replace(f"{dist}-{old}.dist-info", f"{dist}-{version}.dist-info")
            if name.endswith(".dist-info/RECORD"):
                continue
            data = _patch(name, src.read(info))
            if name.endswith(".dist-info/METADATA"):
                data = re.sub(rb"(?m)^Version: .*$", f"Version: {version}".encode(), data)
            out_info = zipfile.ZipInfo(name, info.date_time)
            out_info.external_attr = info.external_attr
            z.writestr(out_info, data, zipfile.ZIP_DEFLATED)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            rows.append([name, f"sha256={digest.decode()}", str(len(data))])
        record = f"{dist}-{version}.dist-info/RECORD"
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerows([*rows, [record, "", ""]])
        z.writestr(record, buffer.getvalue())
    return target


def make(folders: list[str], out: Path) -> list[Path]:
    """The newer parts, from the 13.0 wheels found in ``folders``."""
    out.mkdir(parents=True, exist_ok=True)
    made = []
    for prefix, version in PARTS:
        found = [w for f in folders for w in Path(f).glob(f"{prefix}-{version}-*.whl")]
        if found:
            made.append(repack(found[0], out))
    return made


@contextmanager
def served(folder: Path) -> Iterator[str]:
    """``folder`` as a find-links page on 127.0.0.1 (http.server's listing)."""
    handler = functools.partial(_Quiet, directory=str(folder))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass
