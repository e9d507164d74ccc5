"""Where a team's wheels are looked for and published, as uv users expect: each of
``index``, ``publish`` and ``prebuilt`` from the first place that gives it, in the order
its row in the registry names (the command line, the environment, the project's
``[tool.wheelcuda]``, then the user's file: :mod:`wheelcuda._rules.settings_read`). Pure:
the callers read the files (:mod:`wheelcuda._team.probe`). ``--no-index`` turns the
lookup off; an empty list in a file does too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .._data import settings as registry
from .._rules.settings_read import NO_FILES, Files, read

INDEX_VAR = registry.INDEX_URL.name
PUBLISH_VAR = registry.PUBLISH_URL.name
USERNAME_VAR = registry.INDEX_USERNAME.name
PASSWORD_VAR = registry.INDEX_PASSWORD.name
#: The team's index and who wheelcuda is there. ``install`` looks up and publishes
#: itself, so the installer's environment goes without them: any sdist's setup.py runs
#: in it and could read the password and publish under a teammate's label.
TEAM_VARS = (INDEX_VAR, PUBLISH_VAR, USERNAME_VAR, PASSWORD_VAR)
#: An index of fat prebuilt wheels (Astral's GPU index and the like): off unless named,
#: nothing is downloaded from a third party without consent.
PREBUILT_VAR = registry.PREBUILT_URL.name


@dataclass(frozen=True)
class Sharing:
    """The indexes looked in before a build, in order, and where a build is published;
    each with the place that set it (doctor shows it)."""

    indexes: tuple[str, ...] = ()
    publish: str | None = None
    index_origin: str = ""
    publish_origin: str = ""
    #: public indexes of prebuilt wheels, consulted after the team's (``--prebuilt``)
    prebuilt: tuple[str, ...] = ()


def choose(cli_indexes: Sequence[str], cli_publish: str | None, no_index: bool,
           environ: Mapping[str, str], files: Files = NO_FILES, *,
           cli_prebuilt: Sequence[str] = ()) -> Sharing:
    """The settings (pure), each read from its row's sources in its row's order."""
    publish = read(registry.PUBLISH_URL, environ, given=cli_publish, files=files)
    if no_index:  # what it turns off is not read, so not refused either
        return Sharing((), publish.text, "--no-index", publish.origin)
    indexes = read(registry.INDEX_URL, environ, given=cli_indexes, files=files)
    prebuilt = read(registry.PREBUILT_URL, environ, given=cli_prebuilt, files=files)
    return Sharing(indexes.many, publish.text, indexes.origin, publish.origin, prebuilt.many)

