"""``wheelcuda cache list|show|clear|prune``: what the cache holds, and taking it out.

The cache holds three things (see _store/layout.py): built wheels (``builds``, per key),
synthesized trees (``homes``) and fetched compiler sets (``toolkits``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .._context import Context
from .._probe import machine
from .._rules import buildkey, compile_counts, progress, render
from .._standalone import _events
from .._store import buildlog, fs, prune, wheels
from .._store.layout import Layout
from ..errors import WheelcudaError
from .common import note

NAME = "cache"
HELP = "list, clear or prune wheelcuda's cache (built wheels, trees, toolkits)"
SUMMARY = "list, clear or prune wheelcuda's cache"
NO_PYTHON = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION",
                           help="`wheelcuda cache ACTION -h` shows its options")
    listing = sub.add_parser("list", help="what is cached (wheels by key, trees, toolkits) "
                                          "and the space each takes")
    listing.add_argument("--json", action="store_true",
                         help="print the list as JSON (a versioned envelope)")
    showing = sub.add_parser("show", help="one cached build: its key, its runs and the "
                                          "profile of its compiles (longest file, floor)")
    showing.add_argument("entry", metavar="KEY|PKG",
                         help="a cache key (as `cache list` shows it) or a package name "
                              "(its newest build)")
    showing.add_argument("--json", action="store_true",
                         help="print the entry as JSON (a versioned envelope)")
    clearing = sub.add_parser("clear", help="remove cached builds (of PKG only); --trees, "
                                            "--toolkits or --all for the rest",
                              description="Remove cached builds (of PKG only); --trees, "
                                          "--toolkits or --all for the rest. To build a "
                                          "package again and reinstall it, the cached "
                                          "wheel replaced: wheelcuda install --rebuild PKG")
    clearing.add_argument("package", nargs="?", metavar="PKG",
                          help="remove only the builds of this package (a name, e.g. "
                               "causal-conv1d; default: every build)")
    clearing.add_argument("--trees", action="store_true", help="also remove every tree")
    clearing.add_argument("--toolkits", action="store_true",
                          help="also remove every fetched compiler set (and the links "
                               "to local toolkits)")
    clearing.add_argument("--all", action="store_true", help="remove everything")
    pruning = sub.add_parser("prune", help="remove what no run can use: partial folders "
                                           "of stopped runs, trees whose wheels are gone, "
                                           "toolkits no tree uses")
    pruning.add_argument("--dry-run", action="store_true", help="list, remove nothing")


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def _folders(parent: Path) -> list[dict[str, Any]]:
    try:
        found = sorted(p for p in parent.iterdir() if not p.name.startswith(".") and p.is_dir())
    except OSError:
        return []
    return [{"name": p.name, "path": str(p), "size": wheels.folder_size(p)} for p in found]


def _list(layout: Layout, as_json: bool) -> int:
    entries = wheels.entries(layout)
    homes, kits, local = (_folders(layout.homes), _folders(layout.toolkits),
                          _folders(layout.local))
    if as_json:
        rows = [{"key": e.path.name, "path": str(e.path), "size": e.size, **e.record}
                for e in entries]
        print(render.envelope("cache", {"entries": rows, "trees": homes, "toolkits": kits,
                                        "local": local}), end="")
        return 0
    for e in entries:
        f = e.record.get("fields", {})
        print(f"{e.path.name}  {_mb(e.size)}  {', '.join(e.record.get('installed', []))}")
        print(f"    torch {f.get('torch')} (CUDA {f.get('torch_cuda')}), "
              f"{buildkey.compiler_name(f.get('compiler'))}, archs {f.get('archs')}"
              f"{'' if f.get('prune', True) else ' (all of the package)'}, {f.get('python')}, "
              f"C++11 ABI {f.get('cxx11_abi')}, host {f.get('host_compiler') or 'unknown'}")
    for title, rows in (("tree", homes), ("toolkit", kits), ("local", local)):
        for row in rows:
            print(f"{title} {row['name']}  {_mb(row['size'])}  {row['path']}")
    if not entries:
        note(f"the wheel cache in {layout.builds} is empty")
    return 0


def _show(layout: Layout, wanted: str, as_json: bool) -> int:
    entries = wheels.entries(layout)
    entry = next((e for e in entries if e.path.name == wanted), None) or \
        next((e for e in entries if wheels.matches(e, wanted)), None)
    if entry is None:
        raise WheelcudaError(f"no cached build is {wanted!r} (neither a key nor a package "
                             "name in the wheel cache)",
                             "wheelcuda cache list  (the keys and packages it holds)")
    if as_json:
        print(render.envelope("cache-entry", {"key": entry.path.name, "path": str(entry.path),
                                              **entry.record}), end="")
        return 0
    runs = entry.record.get("runs") or [{}]
    last = runs[-1] if isinstance(runs[-1], dict) else {}
    print(f"{entry.path.name}  {', '.join(entry.record.get('installed', []))}")
    print(f"    last run {last.get('at', '?')} with {last.get('installer', '?')} in "
          f"{_events.duration(float(last.get('seconds') or 0))}; {len(runs)} run(s)")
    counted = last.get("compile_cache")
    if isinstance(counted, dict) and all(isinstance(counted.get(k), int)
                                         for k in ("hits", "misses", "remote")) \
            and all(isinstance(v, int) for v in counted.values()):
        print(f"    {compile_counts.said(counted)}")
    for line in progress.profile_text(progress.from_profile(entry.record.get("profile")),
                                      machine.cores()):
        print(f"    {line}")
    return 0


def _clear(layout: Layout, args: argparse.Namespace) -> int:
    removed, busy = wheels.clear(layout, args.package)
    note(f"removed {len(removed)} cached build(s)" + (f" of {args.package}" if args.package
                                                      else ""))
    for what, parent, wanted in (("tree", layout.homes, args.trees or args.all),
                                 ("toolkit", layout.toolkits, args.toolkits or args.all),
                                 ("local toolkit link", layout.local,
                                  args.toolkits or args.all)):
        if not wanted:
            continue
        gone = 0
        for row in _folders(parent):
            with fs.try_locked(layout.lock(parent, row["name"])) as mine:
                if not mine:
                    busy.append(Path(row["path"]))
                    continue
                fs.discard(Path(row["path"]))
                gone += 1
        note(f"removed {gone} {what}(s) from {parent}")
    if args.all:  # the logs of running builds stay (their compilers write them)
        running = {p for b in buildlog.running(layout) for p in (b.output, b.events) if p}
        for folder in dict.fromkeys([layout.logs, layout.events]):
            logs = [p for p in (folder.iterdir() if folder.is_dir() else ())
                    if p not in running and not p.name.startswith(".")]
            for path in logs:
                fs.discard(path)
            note(f"removed {len(logs)} build log file(s) from {folder}")
    for path in busy:
        note(f"left {path}: a running wheelcuda holds it")
    return 0


def _prune(layout: Layout, dry_run: bool) -> int:
    removed, busy = prune.prune(layout, dry_run=dry_run)
    verb = "would remove" if dry_run else "removed"
    for r in removed:
        note(f"{verb} {r.path} ({_mb(r.size)}): {r.why}")
    for path in busy:
        note(f"left {path}: a running wheelcuda holds it")
    for home, who in prune.kept(layout):
        note(f"kept {home}: no environment can use it now, but {who} (its environment "
             "may be made again)")
    total = sum(r.size for r in removed)
    note(f"{verb} {len(removed)} item(s), {_mb(total)}" if removed else "nothing to prune")
    return 0


def main(args: argparse.Namespace, ctx: Context) -> int:
    layout = Layout.for_environ(ctx.environ)
    layout.check()  # a file or someone else's folder is not an empty cache
    if args.action == "list":
        return _list(layout, args.json)
    if args.action == "clear":
        return _clear(layout, args)
    if args.action == "show":
        return _show(layout, args.entry, args.json)
    return _prune(layout, args.dry_run)
