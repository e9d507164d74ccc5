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
from dataclasses import dataclass
from pathlib import Path

from . import _pipeline as pipeline
from ._context import Context
from ._pipeline import Request
from ._rules import arch as archmod
from ._rules.checks import Kind, Problem

__all__ = ["Found", "Problem", "build_env", "cuda_home", "inspect"]


@dataclass(frozen=True)
class Found:
    """What :func:`inspect` found, as the API promises it (the pipeline's own record,
    with its 16 fields, stays free to change)."""

    #: the interpreter builds are for, and why it was taken
    python: str
    why: str
    #: torch's version and the CUDA release it was built with (None: none, or CPU-only)
    torch: str | None
    torch_cuda: str | None
    #: where the compiler set comes from (wheels, store, local, redist, clang), and what
    toolkit: str
    toolkit_description: str
    #: the synthesized CUDA_HOME and its nvcc's version, when it could be built
    cuda_home: Path | None
    nvcc_version: str | None
    #: the GPU architectures builds are for ("9.0", "12.0"), and where they came from
    archs: tuple[str, ...]
    arch_source: str | None
    #: what stops a build (``is_error``) or should be known; each with ``kind``,
    #: ``severity``, ``message`` and ``fix``
    problems: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        """No error: a build through :func:`build_env` would start."""
        return not any(p.is_error for p in self.problems)


def _ctx(environ: Mapping[str, str] | None) -> Context:
    return Context.current() if environ is None else Context.of(environ)


def inspect(python: str | None = None, environ: Mapping[str, str] | None = None) -> Found:
    """Everything wheelcuda finds for the target (the tree is built if it can be);
    nothing is raised: the problems are in ``.problems``."""
    r = pipeline.resolve(_ctx(environ), Request(python=python, need_archs=False))
    return Found(
        python=r.target.python, why=r.target.why,
        torch=r.torch.version if r.torch else None, torch_cuda=r.torch.cuda if r.torch else None,
        toolkit=str(r.toolkit.source), toolkit_description=r.toolkit.description,
        cuda_home=r.home.path if r.home else None,
        nvcc_version=r.home.nvcc_version if r.home else None,
        archs=tuple(archmod.to_torch([a]) for a in r.archs), arch_source=r.arch_source,
        problems=r.problems)


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
