"""render: every format is read back by its real reader and must give each value exactly.

The shell formats go through bash, dash, zsh and fish themselves; a missing shell fails
the test (with the command that installs it) instead of skipping it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from wheelcuda._rules import render

#: Values that break naive quoting; each must come back byte for byte.
TRICKY = {
    "space": "a b  c ",
    "single_quote": "it's",
    "quotes": "'\"''\"",
    "dollar": "$HOME ${HOME} $(id) $((1+1))",
    "backtick": "`id`",
    "backslash": "C:\\dir\\ \\' \\\\ \\n",
    "trailing_backslash": "end\\",
    "newline": "line1\nline2",
    "trailing_newline": "value\n\n",
    "leading_newline": "\nvalue",
    "only_newline": "\n",
    "empty": "",
    "bang": "!! !$ !-1",
    "unicode": "héllo ✓ 日本 🚀",
    "glob": "* ? [a] ~ {a,b}",
    "operators": "a; echo pwned & | > < #",
    "tab_cr": "a\tb\rc",
    "colons": "/a::/b c:/it's:",
    "heredoc_like": "x<<EOF=y",
}

POSIX_SHELLS = ("bash", "dash", "zsh")

#: The environment the shells run in: no inherited surprises, bytes-only locale.
SHELL_ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}


#: Values after a first and a second eval, then the exported environment.
Readback = tuple[list[bytes], list[bytes], dict[bytes, bytes]]


#: How to get every reader these tests run (.ci/run does this when one is missing).
INSTALL_SHELLS = "apt-get update -q && apt-get install -y -q zsh fish"


def _which(program: str) -> str:
    """The program's path, or fail: a round trip that skips proves nothing, so a
    missing reader is a broken test machine, not a test to leave out."""
    path = shutil.which(program)
    if path is None:
        pytest.fail(f"{program} is not installed, so its round trip cannot run: {INSTALL_SHELLS}")
    return path


def _env0(output: bytes) -> dict[bytes, bytes]:
    """Parse ``env -0``: NUL-separated NAME=value records."""
    records = [record for record in output.split(b"\0") if record]
    return dict(record.split(b"=", 1) for record in records)


def _split(output: bytes, count: int) -> Readback:
    """Split NUL-ended values printed after each of two evals, then ``env -0``.

    NUL is the only safe separator: no environment value can hold it.
    """
    fields = output.split(b"\0")
    exported = b"\0".join(fields[2 * count :])
    return fields[:count], fields[count : 2 * count], _env0(exported)


def _eval_sh(shell: str, text: str, names: list[str]) -> Readback:
    """Run ``eval "$(...)"`` twice in ``shell``; the values after each, and what it exports."""
    show = "printf '%s\\0' " + " ".join(f'"${name}"' for name in names)
    script = f's=$(cat); eval "$s"; {show}; eval "$s"; {show}; env -0'
    done = subprocess.run(
        [_which(shell), "-c", script],
        input=text.encode(),
        capture_output=True,
        env=SHELL_ENV,
        check=True,
        timeout=30,
    )
    return _split(done.stdout, len(names))


@pytest.mark.parametrize("shell", POSIX_SHELLS)
@pytest.mark.parametrize("key", list(TRICKY))
def test_sh_eval_reproduces_value(shell: str, key: str) -> None:
    value = TRICKY[key]
    first, second, exported = _eval_sh(shell, render.render({"V": value}, "sh"), ["V"])
    assert first == [value.encode()]
    assert second == first
    assert exported[b"V"] == value.encode()


@pytest.mark.parametrize("shell", POSIX_SHELLS)
def test_sh_eval_all_values_at_once(shell: str) -> None:
    variables = {f"V_{key}": value for key, value in TRICKY.items()}
    first, second, exported = _eval_sh(shell, render.render(variables, "sh"), list(variables))
    assert first == [value.encode() for value in variables.values()]
    assert second == first
    assert all(exported[name.encode()] == value.encode() for name, value in variables.items())


def test_sh_text_form_keeps_order() -> None:
    text = render.render({"B": "x y", "A": "it's"}, "sh")
    assert text == "export B='x y'\nexport A='it'\\''s'\n"


def _fish_quoted(text: str, pos: int) -> tuple[str, int]:
    """One fish single-quoted word at ``pos``: only \\\\ and \\' are escapes inside."""
    assert text[pos] == "'"
    pos += 1
    chars = []
    while text[pos] != "'":
        if text[pos] == "\\" and text[pos + 1] in "\\'":
            pos += 1
        chars.append(text[pos])
        pos += 1
    return "".join(chars), pos + 1


def _parse_fish(text: str) -> dict[str, list[str]]:
    """Read back ``set -gx NAME 'item' ...;`` lines the way fish tokenizes them."""
    result: dict[str, list[str]] = {}
    pos = 0
    while pos < len(text):
        assert text.startswith("set -gx ", pos)
        end = text.index(" ", pos + len("set -gx "))
        name, pos = text[pos + len("set -gx ") : end], end
        items = []
        while text[pos] == " ":
            item, pos = _fish_quoted(text, pos + 1)
            items.append(item)
        assert text[pos : pos + 2] == ";\n"
        result[name] = items
        pos += 2
    return result


def test_fish_text_form() -> None:
    variables = {f"V_{key}": value for key, value in TRICKY.items()}
    variables["LD_LIBRARY_PATH"] = "/a:/b c::/it's"
    parsed = _parse_fish(render.render(variables, "fish"))
    assert list(parsed) == list(variables)
    assert parsed["LD_LIBRARY_PATH"] == ["/a", "/b c", "", "/it's"]
    assert all(parsed[f"V_{key}"] == [value] for key, value in TRICKY.items())


def test_fish_path_is_a_list() -> None:
    assert render.render({"PATH": "/a:/b"}, "fish") == "set -gx PATH '/a' '/b';\n"
    assert render.render({"PATHS": "/a:/b"}, "fish") == "set -gx PATHS '/a:/b';\n"


@pytest.mark.parametrize("key", list(TRICKY))
def test_fish_source_reproduces_value(key: str, tmp_path: Path) -> None:
    # WHEELCUDA_T_PATH is a path variable in fish (its name ends in PATH); V is not.
    value = TRICKY[key]
    script = tmp_path / "env.fish"
    script.write_text(render.render({"V": value, "WHEELCUDA_T_PATH": value}, "fish"), "utf-8")
    show = "printf '%s\\0' \"$V\" (count $WHEELCUDA_T_PATH)"
    command = f"source $argv[1]; {show}; source $argv[1]; {show}; env -0"
    done = subprocess.run(
        [_which("fish"), "--no-config", "-c", command, str(script)],
        capture_output=True,
        env={**SHELL_ENV, "LC_ALL": "C.UTF-8"},
        check=True,
        timeout=30,
    )
    first, second, exported = _split(done.stdout, 2)
    assert first == [value.encode(), str(len(value.split(":"))).encode()]
    assert second == first
    assert exported[b"V"] == value.encode()
    assert exported[b"WHEELCUDA_T_PATH"] == value.encode()


def _parse_github_env(text: str) -> dict[str, str]:
    """Read a GITHUB_ENV file as the Linux runner does (SetEnvFileCommand, actions/runner).

    Lines end at LF; empty lines are skipped; ``NAME=value`` when '=' comes before
    '<<', else ``NAME<<DELIM`` and the lines up to one equal to DELIM, joined by LF.
    """
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    env: dict[str, str] = {}
    it = iter(lines)
    for line in it:
        if not line:
            continue
        equals, heredoc = line.find("="), line.find("<<")
        if equals >= 0 and (heredoc < 0 or equals < heredoc):
            name, value = line.split("=", 1)
        else:
            assert heredoc > 0, f"invalid line {line!r}"
            name, delimiter = line.split("<<", 1)
            body = []
            for body_line in it:
                if body_line == delimiter:
                    break
                body.append(body_line)
            else:
                raise AssertionError(f"delimiter {delimiter!r} not found")
            value = "\n".join(body)
        env[name] = value
    return env


def test_github_round_trip() -> None:
    variables = {f"V_{key}": value for key, value in TRICKY.items()}
    variables["INJECT"] = "x\nEVIL=1\nEOF"
    text = render.render(variables, "github")
    assert _parse_github_env(text) == variables


def test_github_forms() -> None:
    assert render.render({"A": "x=y<<z", "B": ""}, "github") == "A=x=y<<z\nB=\n"
    text = render.render({"M": "one\ntwo\n"}, "github")
    match = re.fullmatch(r"M<<(ghadelimiter_[0-9a-f]{32})\none\ntwo\n\n\1\n", text)
    assert match is not None, text


def test_github_delimiter_avoids_value(monkeypatch: pytest.MonkeyPatch) -> None:
    taken, free = uuid.UUID(int=1), uuid.UUID(int=2)
    monkeypatch.setattr(uuid, "uuid4", iter([taken, free]).__next__)
    value = f"a\nghadelimiter_{taken.hex}\nb"
    text = render.render({"M": value}, "github")
    assert text == f"M<<ghadelimiter_{free.hex}\n{value}\nghadelimiter_{free.hex}\n"
    assert _parse_github_env(text) == {"M": value}


def test_json_envelope() -> None:
    variables = {"Z": "1", "A": "it's\n", "U": "日本"}
    text = render.render(variables, "json")
    data = json.loads(text)
    assert text.endswith("}\n")
    assert data == {"schema": 1, "kind": "env", "variables": variables}
    assert list(data) == sorted(data)
    assert list(data["variables"]) == sorted(variables)


def test_envelope_refuses_reserved_keys() -> None:
    with pytest.raises(ValueError, match="reserved"):
        render.envelope("env", {"schema": 2})


def test_shells() -> None:
    assert render.SHELLS == ("sh", "fish", "json", "github")


@pytest.mark.parametrize("shell", ["", "bash", "SH", "powershell"])
def test_unknown_shell(shell: str) -> None:
    with pytest.raises(ValueError, match="unknown shell"):
        render.render({"A": "1"}, shell)


@pytest.mark.parametrize("shell", render.SHELLS)
@pytest.mark.parametrize("name", ["", "1A", "A-B", "A B", "A=B", "A<<B", "Ä", "A\n", "$(id)"])
def test_bad_names(shell: str, name: str) -> None:
    with pytest.raises(ValueError, match="invalid environment variable name"):
        render.render({name: "1"}, shell)


@pytest.mark.parametrize("shell", render.SHELLS)
def test_nul_in_value(shell: str) -> None:
    with pytest.raises(ValueError, match="NUL"):
        render.render({"A": "a\0b"}, shell)


# --- unset: what `wheelcuda env --unset` (and env in another environment) prints --------

@pytest.mark.parametrize("shell", POSIX_SHELLS)
def test_sh_unset_takes_a_variable_out(shell: str) -> None:
    text = render.render({"C": "it's"}, "sh", unset=["A", "NEVER_SET"])
    assert text.endswith("unset A\nunset NEVER_SET\n")
    script = 'export A=1 B=2; eval "$(cat)"; env -0'
    done = subprocess.run([_which(shell), "-c", script], input=text.encode(),
                          capture_output=True, env=SHELL_ENV, check=True, timeout=30)
    exported = _env0(done.stdout)
    assert b"A" not in exported and exported[b"B"] == b"2" and exported[b"C"] == b"it's"


def test_fish_unset_takes_a_variable_out(tmp_path: Path) -> None:
    script = tmp_path / "env.fish"
    script.write_text(render.render({"C": "x"}, "fish", unset=["A", "NEVER_SET"]), "utf-8")
    command = "set -gx A 1; set -gx B 2; source $argv[1]; env -0"
    done = subprocess.run([_which("fish"), "--no-config", "-c", command, str(script)],
                          capture_output=True, env=SHELL_ENV, check=True, timeout=30)
    exported = _env0(done.stdout)
    assert b"A" not in exported and exported[b"B"] == b"2" and exported[b"C"] == b"x"


def test_json_lists_what_to_unset() -> None:
    data = json.loads(render.render({"A": "1"}, "json", unset=["Z", "B"]))
    assert data == {"schema": 1, "kind": "env", "variables": {"A": "1"}, "unset": ["B", "Z"]}


def test_github_cannot_unset() -> None:
    """GITHUB_ENV has NAME=value lines only, and an empty CXX is not an unset one."""
    assert render.UNSETS == ("sh", "fish", "json")
    with pytest.raises(ValueError, match="github cannot unset variables \\(A\\)"):
        render.render({}, "github", unset=["A"])


@pytest.mark.parametrize("shell", render.SHELLS)
def test_unset_names_are_checked(shell: str) -> None:
    with pytest.raises(ValueError, match="invalid environment variable name"):
        render.render({}, shell, unset=["A;rm -rf /"])
    with pytest.raises(ValueError, match="both set and unset: A"):
        render.render({"A": "1"}, shell, unset=["A"])
