"""The tree's ``site/sitecustomize.py``: the tree's ``bin`` first on PATH again, inside the
Python processes of a build that has a compile order.

The tree's ``bin/ninja`` (_ninja.py) orders torch's compiles only if torch finds it:
torch runs plain ``ninja`` through PATH. uv puts the build environment's own scripts
folder first on PATH for every build, ``--no-build-isolation`` included (the target
venv's ``bin``; seen with uv 0.13.9 here); the ``ninja`` wheel torch builds need lies
there, so the tree's was never run. (pip leaves PATH alone with
``--no-build-isolation``, the way install runs it; its isolated builds replace
PYTHONPATH, so this file is not for them.) ``wheelcuda install`` names this folder in
PYTHONPATH when it sets ``WHEELCUDA_NINJA_ORDER``: Python imports this file at start-up
(the ``site`` module imports ``sitecustomize``), and it moves the tree's ``bin`` to the
front of PATH, which the processes the build starts inherit. The tree's ninja then runs
the next ``ninja`` on PATH, the build environment's.

Without ``WHEELCUDA_NINJA_ORDER`` it changes nothing. A Python that writes bytecode
leaves ``__pycache__/`` beside this file: the one thing a build writes into a tree,
which the tree's check ignores (it reads the files it made, not the folder). A
``sitecustomize`` further along ``sys.path`` (a distribution's, the user's) is run after
it, as if this one were not there.

Standalone: copied into each tree; the standard library only.
"""

import os
import sys

__all__ = ["ORDER_VAR", "front", "main"]

ORDER_VAR = "WHEELCUDA_NINJA_ORDER"  # _ninja.ORDER_VAR


def front(path: str, first: str) -> str:
    """PATH with ``first`` at its front, once; its other entries as they were, an empty
    one (the current folder) included (pure)."""
    if not path:
        return first
    return os.pathsep.join([first, *(p for p in path.split(os.pathsep) if p != first)])


def _chain(here: str) -> None:
    """Run the ``sitecustomize`` this file hides, if there is one."""
    import importlib.machinery  # noqa: PLC0415 - only when there may be one
    import importlib.util  # noqa: PLC0415

    rest = [p for p in sys.path if os.path.realpath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


def main() -> None:
    here = os.path.dirname(os.path.realpath(__file__))
    if os.environ.get(ORDER_VAR):
        os.environ["PATH"] = front(os.environ.get("PATH", ""),
                                   os.path.join(os.path.dirname(here), "bin"))
    _chain(here)


if __name__ == "sitecustomize":  # imported by site at start-up (not by tests)
    main()
