"""A wheel made shareable: its version labelled with the share key, the key
inside, RECORD made again; checked by pip installing it."""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.metadata
import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from tests.pypi_server import tiny_wheel
from tests.test_share import FIELDS, LABEL
from wheelcuda._team import rules_key as sharekey
from wheelcuda._team import store_wheelfile as wheelfile


def check_record(wheel: Path) -> list[str]:
    """RECORD lists every file with its digest and size, itself without either."""
    with zipfile.ZipFile(wheel) as z:
        files = [i.filename for i in z.infolist() if not i.is_dir()]
        (record,) = [n for n in files if n.endswith(".dist-info/RECORD")]
        rows = list(csv.reader(io.StringIO(z.read(record).decode())))
        assert sorted(r[0] for r in rows) == sorted(files)
        for name, digest, size in rows:
            if name == record:
                assert (digest, size) == ("", "")
                continue
            data = z.read(name)
            raw = hashlib.sha256(data).digest()
            assert digest == "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
            assert int(size) == len(data)
    return files


def test_labelled_wheel(tmp_path: Path) -> None:
    wheel = tiny_wheel(tmp_path / "built", data_script=True)
    out = wheelfile.labelled(wheel, tmp_path / "out", FIELDS)
    assert out.name == f"demo_pkg-1.0.0+{LABEL}-py3-none-any.whl"
    name, version, _build, _tags = parse_wheel_filename(out.name)
    assert (name, version) == ("demo-pkg", Version(f"1.0.0+{LABEL}"))
    files = check_record(out)
    info = f"demo_pkg-1.0.0+{LABEL}.dist-info"
    assert f"{info}/METADATA" in files and f"{info}/{sharekey.KEY_FILE}" in files
    assert f"demo_pkg-1.0.0+{LABEL}.data/scripts/demo-run" in files
    assert not any(f.startswith("demo_pkg-1.0.0.") for f in files)
    with zipfile.ZipFile(out) as z:
        meta = z.read(f"{info}/METADATA").decode()
    assert f"\nVersion: 1.0.0+{LABEL}\n" in meta
    assert meta.endswith("A description.\nVersion: not a header\n")  # the body untouched
    key = wheelfile.read_key(out)
    assert key is not None and sharekey.matches(key, FIELDS)
    assert key["share_id"] == sharekey.share_id(FIELDS)
    assert wheelfile.metadata(out) == {"Name": "demo-pkg", "Version": f"1.0.0+{LABEL}",
                                       "Metadata-Version": "2.1"}
    assert [p.name for p in (tmp_path / "out").iterdir()] == [out.name]  # no temp left
    assert wheelfile.read_key(wheel) is None


def test_pip_installs_it(tmp_path: Path) -> None:
    wheel = tiny_wheel(tmp_path / "built", data_script=True)
    out = wheelfile.labelled(wheel, tmp_path / "out", FIELDS)
    target = tmp_path / "target"
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
           "PIP_CONFIG_FILE": os.devnull}
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                           "--target", str(target), str(out)],
                          capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (dist,) = importlib.metadata.distributions(path=[str(target)])
    assert dist.version == f"1.0.0+{LABEL}"
    assert dist.read_text(sharekey.KEY_FILE) is not None
    assert (target / "demo_pkg" / "__init__.py").is_file()


def test_a_local_label_is_kept_and_a_new_key_replaces_the_old(tmp_path: Path) -> None:
    wheel = tiny_wheel(tmp_path / "built", version="1.7.0+cu128",
                       tag="cp311-cp311-linux_x86_64")
    out = wheelfile.labelled(wheel, tmp_path / "one", FIELDS)
    assert out.name == f"demo_pkg-1.7.0+cu128.{LABEL}-cp311-cp311-linux_x86_64.whl"
    check_record(out)
    other = {**FIELDS, "archs": "12.0"}
    again = wheelfile.labelled(out, tmp_path / "two", other)
    label = sharekey.local_label(sharekey.share_id(other))
    assert again.name == f"demo_pkg-1.7.0+cu128.{label}-cp311-cp311-linux_x86_64.whl"
    files = check_record(again)
    assert sum(f.endswith(sharekey.KEY_FILE) for f in files) == 1
    key = wheelfile.read_key(again)
    assert key is not None and sharekey.matches(key, other)
    assert not sharekey.matches(key, FIELDS)


def test_a_build_tag_stays(tmp_path: Path) -> None:
    wheel = tiny_wheel(tmp_path / "built")
    tagged = wheel.with_name("demo_pkg-1.0.0-1-py3-none-any.whl")
    wheel.rename(tagged)
    out = wheelfile.labelled(tagged, tmp_path / "out", FIELDS)
    assert out.name == f"demo_pkg-1.0.0+{LABEL}-1-py3-none-any.whl"


def test_signatures_are_dropped(tmp_path: Path) -> None:
    wheel = tiny_wheel(tmp_path / "built",
                       extra={"demo_pkg-1.0.0.dist-info/RECORD.jws": b"{}"})
    files = check_record(wheelfile.labelled(wheel, tmp_path / "out", FIELDS))
    assert not any(f.endswith("RECORD.jws") for f in files)


def test_not_a_wheel(tmp_path: Path) -> None:
    bad = tmp_path / "demo_pkg-1.0.0-py3-none-any.whl"
    bad.write_bytes(b"not a zip")
    with pytest.raises(wheelfile.WheelFileError, match="cannot read"):
        wheelfile.labelled(bad, tmp_path / "out", FIELDS)
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []
    with pytest.raises(wheelfile.WheelFileError, match="not a wheel's file name"):
        wheelfile.labelled(tmp_path / "x.zip", tmp_path / "out", FIELDS)


def test_read_key_never_raises(tmp_path: Path) -> None:
    bad = tmp_path / "bad.whl"
    bad.write_bytes(b"PK\x03\x04 and then nothing")
    assert wheelfile.read_key(bad) is None
    assert wheelfile.read_key(tmp_path / "missing.whl") is None
    junk = tmp_path / "junk.whl"
    with zipfile.ZipFile(junk, "w") as z:
        z.writestr(f"x-1.dist-info/{sharekey.KEY_FILE}", b"\xff not json")
    assert wheelfile.read_key(junk) is None
    listed = tmp_path / "list.whl"
    with zipfile.ZipFile(listed, "w") as z:
        z.writestr(f"x-1.dist-info/{sharekey.KEY_FILE}", b"[1, 2]")
    assert wheelfile.read_key(listed) is None
