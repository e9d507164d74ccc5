"""The commands, one module each (a package for one with several parts: install, doctor,
uv-config): ``NAME``, ``HELP``, ``add_arguments(parser)`` and ``main(args, ctx) -> exit
code``. Adding a command means adding a module and naming it in :data:`COMMANDS`; the
CLI builds its parser from this list."""

from __future__ import annotations

from . import (
    builds,
    cache,
    constraints,
    doctor,
    env,
    fetch,
    home,
    install,
    publish,
    run,
    uv_config,
)

__all__ = ["COMMANDS"]

COMMANDS = (env, home, doctor, install, run, fetch, builds, cache, publish, uv_config,
            constraints)
