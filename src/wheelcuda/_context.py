"""The one place that reads the process's environment.

Everything below takes a :class:`Context`: the variables, the working folder and the
interpreter that runs wheelcuda. A command builds one at its start
(:meth:`Context.current`) and hands it down, so a caller (the Python API, a test, the
PEP 517 backend) can answer for another environment without touching ``os.environ``,
and per-process caches keyed on a context can never serve an answer computed for
another (``build_env(current=B)`` would put CUDA_HOME in A's variables and clean B's
PATH).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

#: How a switch variable is turned on, whatever its case and surrounding space (the
#: registry, _data/settings.py, says the same; a test keeps them equal).
FLAG_WORDS = ("1", "true", "yes", "on")


def is_on(value: str | None) -> bool:
    """Whether a switch variable's value turns it on: ``1``, ``true``, ``yes`` or ``on``.
    The one parse of every ``WHEELCUDA_*`` flag, the warm path's included."""
    return (value or "").strip().lower() in FLAG_WORDS


@dataclass(frozen=True)
class Context:
    """What a run depends on from outside: hashable, so caches can be keyed on it."""

    items: tuple[tuple[str, str], ...]
    cwd: str
    #: The interpreter running wheelcuda (absolute: a relative spelling is the same one).
    executable: str
    #: Its import path less sys.path[0]: which copy of wheelcuda and packaging answer.
    sys_path: tuple[str, ...] = ()
    _map: Mapping[str, str] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_map", MappingProxyType(dict(self.items)))

    @classmethod
    def current(cls) -> Context:
        """This process: ``os.environ``, ``os.getcwd()``, ``sys.executable``."""
        return cls.of(os.environ)

    @classmethod
    def of(cls, environ: Mapping[str, str], cwd: str | None = None) -> Context:
        """A context with these variables, for this interpreter."""
        return cls(tuple(sorted(environ.items())), cwd or _cwd(),
                   os.path.normpath(os.path.abspath(sys.executable)), tuple(sys.path[1:]))

    @property
    def environ(self) -> Mapping[str, str]:
        return self._map

    def get(self, name: str, default: str | None = None) -> str | None:
        return self._map.get(name, default)

    def flag(self, name: str) -> bool:
        """A switch variable: ``1``, ``true``, ``yes`` or ``on`` (:func:`is_on`)."""
        return is_on(self._map.get(name))

    def with_env(self, **changes: str | None) -> Context:
        """The same context with variables set (or removed, for None)."""
        env = dict(self.items)
        for name, value in changes.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        return Context(tuple(sorted(env.items())), self.cwd, self.executable, self.sys_path)


@contextlib.contextmanager
def patched_environ(changes: Mapping[str, str | None]) -> Iterator[None]:
    """Set these variables of this process (None removes one) for the block, and put
    back what was there before when it ends, however it ends: for the PEP 517 backend
    (:mod:`wheelcuda.build_meta`), whose inner backend builds in this process."""
    saved = {name: os.environ.get(name) for name in changes}
    try:
        _set(changes)
        yield
    finally:
        _set(saved)


def _set(changes: Mapping[str, str | None]) -> None:
    for name, value in changes.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:  # the working folder was removed under us
        return "/"
