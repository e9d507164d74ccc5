"""The tree plan for both layouts, from listings alone (pure)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from wheelcuda._data import catalog
from wheelcuda._rules import tree as plan

CU13 = "/site/nvidia/cu13"
LISTING: dict[str, list[tuple[str, bool]]] = {
    f"{CU13}/bin": [("nvcc", False), ("nvcc.profile", False), ("ptxas", False), ("crt", True)],
    f"{CU13}/include": [("cuda.h", False), ("cccl", True), ("crt", True)],
    f"{CU13}/lib": [("libcudart.so.13", False), ("libcudart_static.a", False),
                    ("libnvrtc-builtins.so.13.0", False), ("libfoo.so", False),
                    ("libfoo.so.1", False), ("cmake", True)],
    f"{CU13}/nvvm": [("bin", True), ("libdevice", True)],
    "/site/nvidia/cuda_nvcc/bin": [("ptxas", False)],
    "/site/nvidia/cuda_nvcc/include": [("crt", True), ("nvPTXCompiler.h", False)],
    "/site/nvidia/cuda_nvcc/nvvm": [("libdevice", True)],
    "/site/nvidia/cuda_runtime/include": [("cuda.h", False), ("crt", True)],
    "/site/nvidia/cuda_runtime/lib": [("libcudart.so.12", False)],
    "/site/nvidia/cuda_nvcc/include/crt": [("host_config.h", False)],
    "/site/nvidia/cuda_runtime/include/crt": [("host_defines.h", False)],
}


def listdir(path: str) -> Sequence[tuple[str, bool]] | None:
    return LISTING.get(path)


def _plan(sources: list[str]) -> dict[str, str]:
    tree = plan.plan_tree("k", sources, listdir, versions={"cuda_nvcc": "13.0.88"},
                          cuda="13.0.3", target_dir="x86_64-linux")
    return {lk.path: lk.target for lk in tree.links}


def test_cu13_layout_is_like_a_toolkit() -> None:
    links = _plan([CU13])
    assert links["bin/nvcc"] == f"{CU13}/bin/nvcc"  # per file: nvcc.profile's _HERE_
    assert links["bin/nvcc.profile"] == f"{CU13}/bin/nvcc.profile"
    assert links["include"] == f"{CU13}/include"  # one provider: one link
    assert links["nvvm"] == f"{CU13}/nvvm"
    assert links["lib64/libcudart.so.13"] == f"{CU13}/lib/libcudart.so.13"
    assert links["lib64/libcudart.so"] == "libcudart.so.13"  # the dev link builds need
    assert links["lib64/libnvrtc-builtins.so"] == "libnvrtc-builtins.so.13.0"
    assert links["lib64/libfoo.so"] == f"{CU13}/lib/libfoo.so"  # existing one kept
    assert links["lib"] == "lib64"
    assert links["targets/x86_64-linux/include"] == "../../include"
    assert links["targets/x86_64-linux/lib"] == "../../lib64"
    assert "bin" not in links and "lib64" not in links  # real folders


def test_cu12_layout_is_merged_per_file() -> None:
    links = _plan(["/site/nvidia/cuda_nvcc", "/site/nvidia/cuda_runtime"])
    assert links["include/cuda.h"] == "/site/nvidia/cuda_runtime/include/cuda.h"
    assert links["include/crt/host_config.h"].endswith("cuda_nvcc/include/crt/host_config.h")
    assert links["include/crt/host_defines.h"].endswith("runtime/include/crt/host_defines.h")
    assert links["lib64/libcudart.so"] == "libcudart.so.12"
    assert links["nvvm"] == "/site/nvidia/cuda_nvcc/nvvm"


def test_stub_header_and_version_json() -> None:
    tree = plan.plan_tree("k", [CU13], listdir, versions={"cuda_nvcc": "13.0.88"},
                          cuda="13.0.3", target_dir="x86_64-linux")
    assert tree.stub_header == os.path.join(CU13, "include", "cuda.h")
    text = dict(tree.files)["version.json"]
    data = json.loads(text)
    assert data["cuda"] == {"name": "CUDA SDK", "version": "13.0.3"}
    assert data["cuda_nvcc"]["version"] == "13.0.88"
    assert '"version" : "13.0.3"' in text  # NVIDIA's spacing


def test_key_is_per_exact_component_set() -> None:
    a = plan.tree_key(13, [("cuda_nvcc", "13.0.88", CU13)], "x86_64-linux")
    assert a.startswith("cu13.0-")
    assert a == plan.tree_key(13, [("cuda_nvcc", "13.0.88", CU13)], "x86_64-linux")
    assert a != plan.tree_key(13, [("cuda_nvcc", "13.0.89", CU13)], "x86_64-linux")
    assert a != plan.tree_key(13, [("cuda_nvcc", "13.0.88", "/other")], "x86_64-linux")


def test_catalog_is_complete_for_every_layout() -> None:
    for comp in catalog.COMPONENTS:
        for major in catalog.MAJORS:
            assert comp.wheels[major] and comp.folders[major].startswith("nvidia/")
            assert comp.files[major]


def test_hidden_files_stay_out_and_their_folder_is_merged() -> None:
    """A copy of another CUDA release (pip's second prefix) lends no file to the tree:
    its folder, which would be linked whole, is merged file by file instead."""
    normal, overlay = "/n/nvidia/cu13", "/o/nvidia/cu13"
    listing = {
        f"{normal}/bin": [("nvcc", False)],
        f"{normal}/include": [("cuda_runtime_api.h", False), ("crt", True),
                              ("new_in_13_5.h", False)],
        f"{normal}/include/crt": [("host_config.h", False)],
        f"{overlay}/include": [("cuda_runtime_api.h", False), ("cublas_v2.h", False)],
        f"{normal}/lib": [("libcudart.so.13", False)],
        f"{overlay}/lib": [("libcudart.so.13", False)],
    }
    hidden = frozenset({f"{normal}/include/cuda_runtime_api.h",
                        f"{normal}/include/new_in_13_5.h", f"{normal}/lib/libcudart.so.13"})
    tree = plan.plan_tree("k", [normal, overlay], listing.get, versions={},
                          cuda="13.0.3", target_dir="x86_64-linux", hidden=hidden)
    links = {lk.path: lk.target for lk in tree.links}
    assert links["include/cuda_runtime_api.h"] == f"{overlay}/include/cuda_runtime_api.h"
    assert links["lib64/libcudart.so.13"] == f"{overlay}/lib/libcudart.so.13"
    assert "include/new_in_13_5.h" not in links
    assert links["include/crt"] == f"{normal}/include/crt"  # the compiler's own: whole
    alone = plan.plan_tree("k", [normal], listing.get, versions={}, cuda="13.0.3",
                           target_dir="x86_64-linux", hidden=hidden)
    assert {lk.path for lk in alone.links} >= {"include/crt"}  # merged, not linked whole
    assert "include" not in {lk.path for lk in alone.links}
