"""A setting read from the sources its registry row names, in the row's order: the same
order the docs' tables print (``Setting.precedence``), for every row that has more than
its variable, so a new row is read and documented one way."""

from __future__ import annotations

import pytest

from wheelcuda._data import settings as registry
from wheelcuda._data.settings import Setting
from wheelcuda._rules.settings_read import Files, Read, read, refused
from wheelcuda.errors import ConfigError

#: The rows that say more than their variable: a flag, or a key in a file.
LAYERED = [s for s in registry.ALL if s.cli or s.config_setting or s.project or s.user_file]


def _value(s: Setting, tag: str) -> str:
    return f"https://{tag}.example/simple/" if s.kind.startswith("url") else f"{tag}-value"


def _sources(s: Setting) -> dict[str, dict[str, object]]:
    """Each source the row names, as ``read``'s keyword arguments giving one value."""
    out: dict[str, dict[str, object]] = {}
    if s.cli or s.config_setting:
        out["given"] = {"given": _value(s, "given")}
    out["environ"] = {"environ": {s.name: _value(s, "environ")}}
    if s.project:
        out["project"] = {"project": ("pyproject.toml", {s.project: _value(s, "project")})}
    if s.user_file:
        out["user"] = {"user": ("wheelcuda.toml", {s.user_file: _value(s, "user")})}
    return out


def _read(s: Setting, sources: dict[str, dict[str, object]]) -> Read:
    merged: dict[str, object] = {"environ": {}}
    for kw in sources.values():
        merged.update(kw)
    files = Files(merged.pop("project", None), merged.pop("user", None))  # type: ignore[arg-type]
    return read(s, merged.pop("environ"), files=files, **merged)  # type: ignore[arg-type]


@pytest.mark.parametrize("setting", LAYERED, ids=lambda s: s.name)
def test_the_first_source_in_the_row_s_order_wins(setting: Setting) -> None:
    """All sources given, then each winner taken away in turn: the next one in the row's
    order wins, and the order is the one its docs print."""
    sources, order = _sources(setting), []
    while sources:
        got = _read(setting, sources)
        winner = next(k for k in sources if _value(setting, k) in str(got.value))
        assert winner == next(iter(sources)), (setting.name, winner)
        order.append(got.origin)
        del sources[winner]
    assert _read(setting, {}) == Read()
    printed = [p for p in setting.precedence() if p not in (*setting.before, *setting.after)]
    assert len(printed) == len(order)
    for origin, said in zip(order, printed, strict=True):
        name = {"pyproject.toml": f"`[tool.wheelcuda] {setting.project}`",
                "wheelcuda.toml": f"`{setting.user_file}`"}.get(origin, f"`{origin}`")
        assert said.startswith(name) or name in said, (origin, said)


def test_a_list_a_string_and_an_empty_value() -> None:
    url, other = "https://a.example/simple/", "https://b.example/simple/"
    index = registry.INDEX_URL
    assert read(index, {index.name: f" {url}  {other} "}).many == (url, other)
    assert read(index, {index.name: "   "}) == Read()  # empty is unset, as uv reads it
    assert read(index, {}, given=[]) == Read()
    assert read(index, {}, files=Files(("p", {"index": url}))).many == (url,)
    off = read(index, {}, files=Files(("p", {"index": []}), ("u", {"index": [url]})))
    assert off == Read((), "p")  # an empty list in a file turns the lookup off
    assert read(registry.TOOLKIT, {}, given="  local ").text == "local"


@pytest.mark.parametrize(("setting", "table", "said", "fix"), [
    (registry.INDEX_URL, {"index": 3}, "index must be a URL or a list of URLs",
     'index = ["https://pypi.example.com/simple/"]'),
    (registry.INDEX_URL, {"index": ["x", ""]}, "a list of URLs", "index = ["),
    (registry.PUBLISH_URL, {"publish": ["x"]}, "publish must be a URL",
     'publish = "https://pypi.example.com/"'),
    (registry.PREBUILT_URL, {"prebuilt": 7}, "prebuilt must be a URL", "prebuilt = ["),
])
def test_a_file_s_value_of_another_kind_says_the_fix(setting: Setting, table: dict[str, object],
                                                      said: str, fix: str) -> None:
    with pytest.raises(ConfigError, match=said) as info:
        read(setting, {}, files=Files(("pyproject.toml", table)))
    assert "pyproject.toml" in str(info.value) and info.value.fix.startswith(fix)


def test_a_bad_file_is_refused_even_when_the_flag_wins() -> None:
    """As uv reads its own settings files whole: a typo there is said at once, not on the
    day the flag is left out. The variable is read only when it wins."""
    index = registry.INDEX_URL
    with pytest.raises(ConfigError, match=r"wheelcuda\.toml"):
        read(index, {}, given=["https://a.example/"], files=Files(user=("wheelcuda.toml",
                                                                        {"index": 3})))
    assert read(index, {index.name: "ftp://x"}, given=["https://a.example/"]).origin == "--index"


@pytest.mark.parametrize(("url", "said"), [
    ("ftp://x/simple/", "give an http:// or https:// one"),
    ("file:///srv/wheels", "give an http:// or https:// one"),  # a folder lists no sha256
    ("https://host:99999/", "host or port cannot be read"),
    ("https:///simple/", "names no host"),
    ("pypi.example.com/simple", "give an http:// or https:// one"),
])
def test_the_row_s_schemes_are_checked(url: str, said: str) -> None:
    with pytest.raises(ConfigError, match=said) as info:
        read(registry.INDEX_URL, {}, given=[url])
    assert info.value.fix.startswith("--index https://")
    assert ("pypiserver" in info.value.fix) == url.startswith("file:")
    with pytest.raises(ConfigError, match=r"^WHEELCUDA_INDEX_URL: ") as info:
        read(registry.INDEX_URL, {registry.INDEX_URL.name: url})
    assert info.value.fix.startswith("export WHEELCUDA_INDEX_URL=https://")
    with pytest.raises(ConfigError, match=r"^pyproject\.toml: ") as info:
        read(registry.INDEX_URL, {}, files=Files(("pyproject.toml", {"index": url})))
    assert info.value.fix.startswith('index = "https://')
    # a row without schemes (a mirror may be file://) is not checked
    assert read(registry.REDIST_URL, {registry.REDIST_URL.name: "file:///m/"}).text == "file:///m/"


def test_a_word_is_one_of_the_row_s_words_in_any_case() -> None:
    installer = registry.INSTALLER
    assert read(installer, {installer.name: " PIP "}) == Read("pip", installer.name)
    with pytest.raises(ConfigError, match=r"^WHEELCUDA_INSTALLER: 'conda' is not uv or pip") \
            as info:
        read(installer, {installer.name: "conda"})
    assert info.value.fix == "export WHEELCUDA_INSTALLER=uv   (or unset it)"
    # a word without a list (--toolkit may also be a folder) is left to its reader
    assert read(registry.TOOLKIT, {}, given="/opt/cuda").text == "/opt/cuda"


@pytest.mark.parametrize(("row", "good", "bad", "said"), [
    (registry.SPLIT_COMPILE, "4", "2.5", "is not a whole number above 0"),
    (registry.SPLIT_COMPILE, "4", "0", "is not a whole number above 0"),
    (registry.JOB_GB, "5.5", "-1", "is not a number above 0 and below a million"),
    (registry.JOB_GB, "5.5", "nan", "is not a number above 0 and below a million"),
    (registry.JOB_GB, "5.5", "1e6", "is not a number above 0 and below a million"),
    (registry.MEMORY, "512M", "half", "is not a size (64G, 512M)"),
    (registry.CXX_STD, "KEEP", "c++20", "is not keep, 0, 11, 14, 17, 20, 23 or 26"),
])
def test_a_checked_kind_is_checked_by_its_row(row: Setting, good: str, bad: str,
                                              said: str) -> None:
    """An environment-only setting is checked where it is read, and ``refused`` lists
    every bad one (doctor shows them all) with the row's example as the fix."""
    assert read(row, {row.name: good}).text == (good.lower() if row.words else good)
    (error,) = refused((row, registry.INSTALLER), {row.name: bad})
    assert error.message == f"{row.name}: {bad!r} {said}"
    assert error.fix == f"export {row.name}={row.example}   (or unset it)"
    assert refused((row,), {}) == []


def test_a_checked_row_has_an_example_for_its_fix() -> None:
    checked = [s for s in registry.ALL
               if s.words or s.schemes or s.kind in ("int", "number", "size")]
    assert checked and all(s.example for s in checked), [s.name for s in checked
                                                         if not s.example]


def test_the_installer_variable_is_read_through_its_row() -> None:
    from wheelcuda._context import Context  # noqa: PLC0415
    from wheelcuda._probe import installer  # noqa: PLC0415
    from wheelcuda._rules.installer import Pip  # noqa: PLC0415

    ctx = Context(((registry.INSTALLER.name, "Pip"),), "/", "/usr/bin/python3")
    assert isinstance(installer.choose(ctx), Pip)
    with pytest.raises(ConfigError, match="is not uv or pip"):
        installer.choose(ctx.with_env(**{registry.INSTALLER.name: "poetry"}))
