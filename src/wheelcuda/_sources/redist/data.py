"""NVIDIA's redistributable archives, as data: the releases wheelcuda knows, and which
archives make a compiler set for each CUDA major.

No CUDA 12 wheel holds nvcc (nvidia-cuda-nvcc-cu12 12.1 to 12.9 ship only ptxas in
``bin``: checked 2026-11-29); NVIDIA's component archives do. Each release
has a manifest ``redistrib_<label>.json`` beside the component folders at
:data:`BASE_URL`, listing per component its version and, per platform, the archive's
``relative_path``, ``sha256`` and ``size``. The store
(:mod:`wheelcuda._sources.redist.store_archives`) unpacks the archives into a folder laid
out like site-packages with the catalog's component folders, so that
:mod:`wheelcuda._probe.locate` finds them as it finds wheels.

Adding a release means adding a line to :data:`RELEASES`; a new archive split (13.0
split nvcc into four archives) means editing :data:`PARTS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from ..._data import catalog
from ..._data import settings as registry
from ..._data.catalog import Component

#: Where NVIDIA serves the manifests and the archives.
BASE_URL: Final = "https://developer.download.nvidia.com/compute/cuda/redist/"

#: The variable that names a mirror laid out like :data:`BASE_URL` (read by the caller,
#: through its Context: only _context.py reads the process environment).
MIRROR_VAR: Final = registry.REDIST_URL.name

#: NVIDIA's platform name per ``platform.machine()``.
PLATFORMS: Final = MappingProxyType({"x86_64": "linux-x86_64", "aarch64": "linux-sbsa"})


@dataclass(frozen=True)
class Release:
    """One CUDA release whose manifest wheelcuda may fetch."""

    #: ``12.8.1``: the manifest is ``redistrib_<label>.json``.
    label: str
    #: sha256 of the manifest file as NVIDIA serves it; a fetched manifest that differs
    #: is refused (a mirror must serve the same bytes). None: checked by nothing but TLS.
    manifest_sha256: str | None

    @property
    def cuda(self) -> str:
        """``12.8.1`` -> ``12.8``: the CUDA version torch names."""
        return ".".join(self.label.split(".")[:2])


#: The newest patch release of each CUDA X.Y torch has been built for. The manifest
#: hashes are pinned as openxla/xla pins them (third_party/gpus/cuda/hermetic/
#: cuda_redist_versions.bzl, reported; 12.8.1's and 12.9.1's also checked against the
#: files NVIDIA serves).
RELEASES: Final = (
    Release("12.1.1", "bafea3cb83a4cf5c764eeedcaac0040d0d3c5db3f9a74550da0e7b6ac24d378c"),
    Release("12.4.1", "9cd815f3b71c2e3686ef2219b7794b81044f9dcefaa8e21dacfcb5bc4d931892"),
    Release("12.6.3", "9c598598457a6463eb92889080c16b2b9dc04150e501b8bfc1536d403ba70aaf"),
    Release("12.8.1", "249e28a83008d711d5f72880541c8be6253f6d61608461de4fcb715554a6cf17"),
    Release("12.9.1", "8335301010b0023ee1ff61eb11e2600ca62002d76780de4089011ad77e0c7630"),
    Release("13.0.2", "fce66717a81c510ffeb89ecc3e79849ab34af3b80139f750876d9033e31d71c2"),
    Release("13.1.1", "97cf605ccc4751825b1865f4af571c9b50dd29ffd13e9a38b296a9ecb1f0d422"),
)


@dataclass(frozen=True)
class Part:
    """One archive of a compiler set, and the catalog component whose folder it fills
    and whose wheel name its ``.dist-info`` takes (so versions show as wheels' do)."""

    #: Its key in the manifest; later names are what newer releases call it.
    names: tuple[str, ...]
    component: Component

    @property
    def name(self) -> str:
        return self.names[0]

    def folder(self, major: int) -> str:
        return self.component.folders[major]

    def dist(self, major: int) -> str:
        return self.component.wheels[major]


#: The archives a build needs, per CUDA major. CUDA 12's ``cuda_nvcc`` holds nvcc,
#: cicc (nvvm/) and crt/, which the catalog lists as three components of one folder and
#: one wheel name; 13.0 split them into four archives (libnvptxcompiler is not needed),
#: and 13.3 renamed ``cuda_cccl`` to ``cccl`` (reported, from NVIDIA's manifests).
PARTS: Final = MappingProxyType({
    12: (Part(("cuda_nvcc",), catalog.NVCC),
         Part(("cuda_cudart",), catalog.RUNTIME),
         Part(("cuda_cccl",), catalog.CCCL)),
    13: (Part(("cuda_nvcc",), catalog.NVCC),
         Part(("cuda_crt",), catalog.CRT),
         Part(("libnvvm",), catalog.NVVM),
         Part(("cuda_cudart",), catalog.RUNTIME),
         Part(("cuda_cccl", "cccl"), catalog.CCCL)),
})


def manifest_name(label: str) -> str:
    """``12.8.1`` -> ``redistrib_12.8.1.json``."""
    return f"redistrib_{label}.json"


#: Archive entries known without the network, for ``--explain`` and the offline listing:
#: (manifest name, version, size, sha256) per (release, platform), as NVIDIA's manifest
#: lists them (checked 2026-11-29). The manifest in use is what is fetched by.
KNOWN_ARCHIVES: Final = MappingProxyType({
    ("12.8.1", "linux-x86_64"): (
        ("cuda_nvcc", "12.8.93", 79015464,
         "9961b3484b6b71314063709a4f9529654f96782ad39e72bf1e00f070db8210d3"),
        ("cuda_cudart", "12.8.90", 1354240,
         "8d566b5fe745c46842dc16945cf36686227536decd2302c372be86da37faca68"),
        ("cuda_cccl", "12.8.90", 928524,
         "0740e9e01e4f15e17c5ab8d68bba4f8ec0eb6b84edccba4ac45112d2d2174e4b"),
    ),
})


def relative_path(name: str, platform: str, version: str) -> str:
    """Where NVIDIA puts an archive under the base URL."""
    return f"{name}/{platform}/{name}-{platform}-{version}-archive.tar.xz"
