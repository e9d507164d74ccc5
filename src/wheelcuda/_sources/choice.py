"""Where the compiler set may come from in one run (:class:`Choice`), read from
``--toolkit``'s word or folder: the one place that knows which source is the target's
own wheels and which the store's."""

from __future__ import annotations

from dataclasses import dataclass

from .._values import SourceName


@dataclass(frozen=True)
class Choice:
    """Where the compiler set may come from: the sources in ``only`` (None: all, in order
    of preference), ``given`` a toolkit folder (``--toolkit PATH``). torch's own libraries
    (their headers: cuBLAS, cuSPARSE) come from the target's wheels whatever the compiler's
    source, unless ``target_libraries`` is off (uv-config: its tree outlives the venv)."""

    only: tuple[str, ...] | None = None
    given: str | None = None
    target_libraries: bool = True

    @classmethod
    def folder(cls, folder: str, *, target_libraries: bool = True) -> Choice:
        """``--toolkit PATH``: the local source, looking at that folder only."""
        return cls((SourceName.LOCAL,), folder, target_libraries=target_libraries)

    def allows(self, source: str) -> bool:
        return (self.only is None or source in self.only) and \
            (source != SourceName.VENV or self.target_libraries)

    @property
    def own_wheels(self) -> bool:
        """The target's own CUDA wheels may serve (in a build environment: the ones its
        frontend installs)."""
        return self.allows(SourceName.VENV)

    @property
    def store_wheels(self) -> bool:
        """The store's CUDA wheels may serve, so a fetch of them may complete the set."""
        return self.allows(SourceName.STORE)

    @property
    def skipped(self) -> tuple[str, ...]:
        """The sources no offer is asked of: the target's own wheels when its libraries
        are left out (their offer is asked apart, for the headers only)."""
        return () if self.target_libraries else (SourceName.VENV,)
