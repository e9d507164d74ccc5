"""What a source declares for its build, and what the target lacks (_rules/buildreqs.py)."""

from __future__ import annotations

import pytest

from wheelcuda._rules import buildreqs


@pytest.mark.parametrize(("setup", "want"), [
    ("from setuptools import setup\nsetup(setup_requires=['setuptools_scm>=3', 'torch'])",
     ["setuptools_scm>=3"]),
    ("import setuptools\nsetuptools.setup(setup_requires=('cython',))", ["Cython"]),
    ("setup(setup_requires='pybind11')", ["pybind11"]),
    ("REQS = ['x']\nsetup(setup_requires=REQS)", []),  # computed: the installer's to see
    ("setup(setup_requires=['not a requirement!'])", []),
    ("this is not python(", []),
])
def test_setup_requires(setup: str, want: list[str]) -> None:
    got = [str(r) for r in buildreqs.declared(setup, None)]
    assert [g.lower() for g in got] == [w.lower() for w in want]


def test_pyproject_requires_come_first_and_each_name_once() -> None:
    pyproject = '[build-system]\nrequires = ["setuptools_scm>=8", "wheel", "Torch==2.14.1"]\n'
    got = buildreqs.declared("setup(setup_requires=['setuptools-scm'])", pyproject)
    assert [str(r) for r in got] == ["setuptools_scm>=8", "wheel"]
    assert buildreqs.declared(None, "[build-system\nnot toml") == []
    assert buildreqs.declared(None, '[project]\nname = "x"\n') == []


def test_missing_for_the_targets_python() -> None:
    reqs = buildreqs.declared(None, '[build-system]\nrequires = ["wheel", "cython", '
                                    '"tomli; python_version < \'3.11\'"]\n')
    have = {"wheel": "0.45"}.get
    assert [r.name for r in buildreqs.missing(reqs, have, (3, 11, 7))] == ["cython"]
    assert [r.name for r in buildreqs.missing(reqs, have, (3, 10, 2))] == ["cython", "tomli"]
