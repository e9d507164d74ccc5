"""A team's folder of wheel variants (PEP 825) that a static file server hands to uv as a
``find-links`` location: each wheel labelled with its share key, pinned to its torch,
holding its ``variant.json``; beside them, one ``{name}-{version}-variants.json`` per
version, made again from the folder's wheels whenever one is added.

uv 0.13.9 reads that JSON only where the listing links it: a flat folder served as it is
(``python -m http.server``, nginx's autoindex, an S3 website) does; pypiserver 2.4.2
neither lists nor serves it (docs/facts.md). The files are made with variantlib
(``wheelcuda[team]``), by the PEP's authors, rather than by hand: uv parses them
strictly, and the format is still moving.
"""

from __future__ import annotations

import importlib
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._store import fs
from ..errors import ConfigError, WheelcudaError
from . import rules_key as sharekey
from . import rules_variants as variants
from . import store_wheelfile as wheelfile

__all__ = ["json_name", "publish"]

_INSTALL_FIX = ("pip install 'wheelcuda[team]' into wheelcuda's environment (uv tool "
                "install '/path/to/wheelcuda[team]'; or: uv pip install 'variantlib==0.2.2')")


def json_name(wheel_name: str) -> str:
    """``causal_conv1d-1.7.0+wc0123456789ab-variants.json`` for any wheel of that name
    and version (PEP 825: the index's file per version)."""
    return "-".join(wheel_name.split("-")[:2]) + "-variants.json"


#: variantlib's modules wheelcuda uses (it has no type information: taken as Any).
_MODULES = ("api", "errors", "models.variant_info", "variant_dist_info")


def _variantlib() -> dict[str, Any]:
    """variantlib's modules by name, imported when a variant is made: only publishing
    needs it, so it is an extra (``wheelcuda[team]``)."""
    try:
        return {m: importlib.import_module(f"variantlib.{m}") for m in _MODULES}
    except ImportError:
        raise ConfigError("publishing wheel variants needs variantlib, which is not "
                          "installed beside wheelcuda", _INSTALL_FIX) from None


def _dist_info(props: Sequence[str]) -> tuple[str, bytes]:
    """The variant's label (variantlib's hash of its properties) and its
    ``variant.json``, naming uv's built-in NVIDIA provider as uv knows it."""
    vl = _variantlib()
    api, models = vl["api"], vl["models.variant_info"]
    desc = api.VariantDescription([api.VariantProperty.from_str(p) for p in props])
    provider = models.ProviderInfo(requires=[variants.PROVIDER_REQUIRES],
                                   plugin_api=variants.PROVIDER_API)
    info = models.VariantInfo(namespace_priorities=[variants.NAMESPACE],
                              providers={variants.NAMESPACE: provider})
    text = api.make_variant_dist_info(desc, variant_info=info)
    return str(desc.hexdigest), str(text).encode()


def _index_json(wheels: Sequence[Path]) -> bytes:
    """The ``variants.json`` of one version from its variant wheels' ``variant.json``
    (variantlib's merge: the same providers, every label once)."""
    read = _variantlib()["variant_dist_info"].VariantDistInfo
    merged = None
    for wheel in wheels:
        raw = wheelfile.read_member(wheel, wheelfile.VARIANT_FILE)
        if raw is None:
            raise ConfigError(f"{wheel} holds no readable {wheelfile.VARIANT_FILE}",
                              f"remove it from {wheel.parent}, or publish it again")
        one = read(raw, wheel.stem.rsplit("-", 1)[1])
        if merged is None:
            merged = one
        else:
            merged.merge(one)
    assert merged is not None  # the wheel just made is among them
    return str(merged.to_str()).encode()


def _writable(folder: Path) -> None:
    fix = ("give --variants a folder you can write (the one your file server serves), "
           f"or make it writable: chmod u+w {folder}")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot make the folder {folder}: {exc.strerror or exc}",
                          fix) from None
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError(f"cannot write to {folder}: "
                          f"{'not a folder' if not folder.is_dir() else 'permission denied'}",
                          fix)


def publish(folder: Path, wheel: Path, fields: Mapping[str, Any], *,
            profile: Sequence[Mapping[str, Any]] | None = None) -> Path:
    """``wheel`` (built under the key ``fields``) written into ``folder`` as a wheel
    variant, and its version's ``variants.json`` made again; the new wheel's path. Both
    are made beside the folder's files first and renamed into place only when both are
    whole: a failure leaves the folder as it was."""
    props = variants.properties(sharekey.share_fields(fields))
    pin = variants.torch_pin(fields)
    _writable(folder)
    refused = _variantlib()["errors"].ValidationError
    try:
        label, text = _dist_info(props)
        with tempfile.TemporaryDirectory(dir=folder, prefix=".wheelcuda-") as tmp:
            made = wheelfile.labelled(wheel, Path(tmp), fields, profile=profile,
                                      requires=[pin], variant=(label, text))
            name = json_name(made.name)
            same = [w for w in sorted(folder.glob("*.whl"))
                    if json_name(w.name) == name and w.name != made.name
                    and wheelfile.read_member(w, wheelfile.VARIANT_FILE) is not None]
            with fs.replacing(Path(tmp), name) as out:
                out.write_bytes(_index_json([*same, made]))
            os.replace(made, folder / made.name)
            os.replace(Path(tmp) / name, folder / name)
    except refused as exc:
        raise ConfigError(f"variantlib refused {wheel.name} as a variant: {exc}",
                          "remove the wheels of this version that wheelcuda did not write "
                          f"from {folder}") from None
    except WheelcudaError:
        raise
    except OSError as exc:
        raise ConfigError(f"cannot write {wheel.name} into {folder}: "
                          f"{exc.strerror or exc}", "free some space there, or give "
                          "--variants another folder") from None
    return folder / made.name
