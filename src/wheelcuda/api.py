"""The Python API: the same answers the command line gives, as functions.

    >>> import wheelcuda
    >>> wheelcuda.cuda_home()                    # Path of the synthesized CUDA_HOME
    >>> wheelcuda.build_env(arch="12.0")         # {"CUDA_HOME": ..., "PATH": ..., ...}

Every function takes ``python`` (an interpreter or environment folder; None means what the
command line would choose: VIRTUAL_ENV, a conda environment, a .venv here or in a parent,
else this interpreter unless it is a uv/pipx tool's) and ``environ`` (the variables to
answer for; None means this process's), and raises a
:class:`~wheelcuda.errors.WheelcudaError` subclass whose text says what to do.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from . import pipeline
from .context import Context
from .pipeline import Request, Resolved
from .rules.checks import Kind

__all__ = ["Resolved", "build_env", "cuda_home", "inspect"]


def _ctx(environ: Mapping[str, str] | None) -> Context:
    return Context.current() if environ is None else Context.of(environ)


def inspect(python: str | None = None, environ: Mapping[str, str] | None = None) -> Resolved:
    """Everything wheelcuda finds for the target (the tree is built if it can be);
    nothing is raised: the problems are in ``.problems``."""
    return pipeline.resolve(_ctx(environ), Request(python=python, need_archs=False))


def cuda_home(python: str | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """Path of the synthesized CUDA_HOME for the target environment."""
    r = pipeline.resolve(_ctx(environ), Request(python=python, need_archs=False))
    r.raise_first(ignore=(Kind.TORCH,))
    assert r.home is not None
    return r.home.path


def build_env(python: str | None = None, arch: str | None = None,
              environ: Mapping[str, str] | None = None, *, all_archs: bool = False
              ) -> dict[str, str]:
    """The variables a build needs (``wheelcuda env``), after every check passes."""
    r = pipeline.resolve(_ctx(environ), Request(python=python, arch=arch, all_archs=all_archs))
    r.raise_first()
    return r.variables()
