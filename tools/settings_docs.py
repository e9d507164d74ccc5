"""Rewrite the tables of environment variables in README.md and docs/development.md from
the registry (src/wheelcuda/data/settings.py): ``make settings-docs``.

``--check`` rewrites nothing and exits 1 when a table differs from the registry's.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from wheelcuda._rules import settings_doc  # noqa: E402 (the checkout's, not an installed one)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for name, audience in settings_doc.DOCS.items():
        path = ROOT / name
        text = path.read_text()
        new = settings_doc.spliced(text, audience)
        if new != text:
            stale.append(name)
            if not check:
                path.write_text(new)
    verb = "differs from the registry" if check else "rewritten"
    for name in stale:
        print(f"{name}: {verb}", file=sys.stderr)
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
