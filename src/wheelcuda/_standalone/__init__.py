"""Programs that run outside wheelcuda's own process, on the standard library alone.

Each is copied somewhere wheelcuda is not importable, or run by another interpreter:

- into each CUDA tree's ``bin/`` (_rules/tree.py ``WRAPPER_MODULES``): the nvcc wrapper
  (``_nvcc_wrapper``, as ``bin/.nvcc-wrapper.py``) and what it imports beside it
  (``_pool``, ``_machine``, ``_cxx_std``, ``_progress``, ``_nvcc_table``, ``_build``,
  ``_events``, ``_tree``, ``_view``, ``_overlap``, ``_archlist``; ``_cxx_std`` is also
  the host compiler shim);
- into the clang toolkit's folder (_sources/clang/store.py): ``_clang_nvcc``, ``_nvcc_args``,
  ``_nvcc_table``, ``_fatbinary``;
- into the target interpreter, as text for ``python -E -c``: ``_interp_probe``.

So they import nothing but the standard library and each other, each other both as
``from . import x`` (here, in the package) and as a flat ``import x`` (copied side by
side into a folder). wheelcuda's layers may import them: they are below ``data``.
"""

from importlib import resources

__all__ = ["source"]


def source(name: str) -> str:
    """The text of one of these programs (``_nvcc_wrapper.py``), to copy or to run."""
    return resources.files(__name__).joinpath(name).read_text()
