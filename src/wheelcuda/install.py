"""``wheelcuda install`` and ``wheelcuda run``: preflight, then one child process.

Preflight answers in seconds what would otherwise fail 25 minutes into a build: torch
present and built with CUDA, the matching compiler (fetched into the store if the
environment lacks it), the build needs of ``--no-build-isolation``, the arch list,
the host compiler. Then the installer runs with the environment of ``wheelcuda env``
plus what the package table and the machine say (MAX_JOBS).
"""

from __future__ import annotations

import os
import platform
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import filelock

from . import (
    _nvcc_wrapper,
    api,
    arch,
    builds,
    checks,
    gpus,
    installer,
    jobs,
    locate,
    packages,
    proc,
    store,
    torchinfo,
)
from .errors import CacheError, ComponentError, ToolError, TorchError

#: What setup.py builds need from the environment under --no-build-isolation.
BUILD_NEEDS = ("setuptools", "wheel", "ninja", "packaging")


@dataclass(frozen=True)
class Prepared:
    """Everything decided before the build starts; ``--explain`` prints it."""

    python: str
    tool: installer.Tool
    argv: list[str]
    variables: dict[str, str]  # what wheelcuda sets on top of the current environment
    archs: tuple[arch.Arch, ...]
    arch_source: str
    names: list[str | None]
    store: str | None
    key: str
    fields: dict[str, object]
    specs: tuple[str, ...] = ()


def _torch_ready(setup: api.Setup) -> None:
    problems = checks.torch_problems(setup.torch, None, setup.target.python)
    for p in problems:
        if p.severity == "error":
            raise TorchError(p.message, p.fix)


def _compiler(setup: api.Setup, fetch: bool) -> tuple[api.Setup, str | None]:
    """The setup with a complete compiler set, fetched into the store if it is missing."""
    problems = [p for p in setup.problems() if p.severity == "error"
                and p.kind in ("missing", "components")]
    if not problems:
        return setup, None
    if any(p.kind != "missing" for p in problems) or setup.torch is None:
        raise ComponentError(problems[0].message, problems[0].fix)
    spec = checks.wanted_specifier(setup.torch, setup.major)
    if not fetch:
        raise ComponentError(problems[0].message + " (and --no-fetch forbids fetching them)",
                             problems[0].fix)
    folder = store.fetch(spec, setup.target.python, setup.major)
    api.inspect.cache_clear()
    return api.inspect(setup.target.python), folder


def missing_build_needs(site_dirs: Sequence[str], path: str) -> list[str]:
    """Build needs absent from the environment (ninja may also come from PATH)."""
    def has(name: str) -> bool:
        return any(locate.dist_version(d, name) for d in site_dirs)

    return [n for n in BUILD_NEEDS
            if not has(n) and not (n == "ninja" and shutil.which("ninja", path=path))]


def prepare(pkgs: Sequence[str], python: str | None, arch_list: str | None,
            extra: Sequence[str], *, fetch: bool = True, all_archs: bool = False,
            environ: Mapping[str, str] | None = None) -> Prepared:
    """Preflight and the full plan of the install; raises before any build starts."""
    environ = os.environ if environ is None else environ
    setup = api.inspect(python)
    _torch_ready(setup)
    setup, folder = _compiler(setup, fetch)
    search = os.pathsep.join([os.path.dirname(setup.target.python), environ.get("PATH", "")])
    missing = missing_build_needs(setup.target.site_dirs, search)
    if missing:
        raise ToolError(f"{', '.join(missing)} missing in {setup.target.python}: "
                        "--no-build-isolation builds use the environment's own",
                        f"uv pip install --python {setup.target.python} {' '.join(missing)}")
    variables = run_environment(setup.target.python, arch_list, environ, all_archs=all_archs)
    names = [packages.distribution_name(p) for p in pkgs]
    archs, source = api.choose_archs(arch_list, environ)
    recipe = packages.recipe_env(names, archs, bool(gpus.probe_gpus().gpus))
    variables_in_key = builds.build_variables(recipe, environ, packages.prefixes(names))
    fields = _key_fields(setup, pkgs, archs, all_archs=all_archs, variables=variables_in_key,
                         extra=extra, environ=environ)
    fields["names"] = [n or "" for n in names]
    key = builds.key_id(fields)
    # for_build keeps the user's own values itself (and replaces an empty MAX_JOBS).
    wanted = {**packages.user_wins(recipe, environ), **jobs.for_build(packages.job_gb(names),
                                                                       environ)}
    tool = installer.choose(environ)
    variables.update(wanted)
    # Not the user's to win: a shared installer cache hands back wheels built against
    # another torch (uv 16850, 3599). Each key gets its own.
    variables.update(builds.installer_cache(tool.name, key))
    argv = installer.install_argv(tool, setup.target.python, _sources(key, pkgs, names), extra)
    return Prepared(setup.target.python, tool, argv, variables, archs, source, names, folder,
                    key, fields, tuple(pkgs))


def _sources(key: str, pkgs: Sequence[str], names: Sequence[str | None]) -> list[str]:
    """The wheels kept under this key when every package has one and its source is
    exact (a folder, a file, name==version), else the packages as given."""
    if all(builds.exact(p) for p in pkgs) and all(names):
        wheels = builds.cached_wheels(key, [n for n in names if n])
        if wheels:
            return wheels
    return list(pkgs)


def _key_fields(setup: api.Setup, pkgs: Sequence[str], archs: Sequence[arch.Arch], *,
                all_archs: bool, variables: Mapping[str, str], extra: Sequence[str],
                environ: Mapping[str, str]) -> dict[str, object]:
    torch = setup.torch
    assert torch is not None  # _torch_ready checked it
    home = api.home_for(setup)
    host = api.check_host(home, environ)  # probed once per run (cached)
    return builds.key_fields(
        packages=[builds.source_id(p) for p in pkgs], torch=torch.version, torch_cuda=torch.cuda,
        compiler=home.nvcc_version, archs=arch.to_torch(archs), prune=not all_archs,
        python_tag=setup.target.tag, cxx11_abi=torchinfo.cxx11_abi(torch), variables=variables,
        installer_args=extra, machine=platform.machine(),
        host_compiler=f"{host.family} {host.version or host.path}")


def run_environment(python: str | None, arch_list: str | None,
                    environ: Mapping[str, str], *, all_archs: bool = False) -> dict[str, str]:
    """``wheelcuda env``'s variables, with the target environment's bin after the tree's
    (its ninja and console scripts, as if it were activated)."""
    variables = api.build_env(python, arch_list, environ, all_archs=all_archs)
    target_bin = os.path.dirname(api.inspect(python).target.python)
    parts = variables["PATH"].split(os.pathsep)
    if target_bin not in parts:
        parts.insert(1, target_bin)
    variables["PATH"] = os.pathsep.join(parts)
    return variables


def explain(p: Prepared) -> str:
    """What ``install`` would set and run, without running it."""
    mode = "the package's own list" if not p.fields.get("prune") else "pruned to these"
    lines = [f"target     {p.python}", f"installer  {p.tool.name}",
             f"archs      {arch.to_torch(p.archs)} (from {p.arch_source}; {mode})",
             f"cache key  {p.key}"]
    if p.store:
        lines.append(f"compiler   fetched into {p.store}")
    for name in p.names:
        recipe = packages.RECIPES.get(name or "")
        if recipe:
            lines.append(f"package    {name}: {recipe.note}")
    lines += [f"set        {k}={v}" for k, v in p.variables.items()]
    lines.append("run        " + " ".join(p.argv))
    return "\n".join(lines) + "\n"


def compile_summary(calls: Sequence[str]) -> str:
    """"3 nvcc compiles, split-compile 2" from the nvcc wrapper's log; "" for none (pure)."""
    compiles = [words for words in (c.split() for c in calls)
                if any(w in _nvcc_wrapper.COMPILES for w in words)]
    if not compiles:
        return ""
    splits = sorted({w.split("=", 1)[1] for words in compiles for w in words
                     if w.startswith("--split-compile=")})
    return f"{len(compiles)} nvcc compiles" + (
        f", split-compile {'/'.join(splits)}" if splits else "")


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{seconds:.1f}s"


def execute(p: Prepared, environ: Mapping[str, str] | None = None) -> tuple[int, str]:
    """Run the installer (output streams through) under the key's lock; the exit code
    and the summary line. Concurrent installs of one key build once: the second waits,
    then finds the wheel in the key's installer cache."""
    lock = builds.lock_path(p.key)
    try:
        with filelock.FileLock(str(lock), timeout=6 * 3600), \
                tempfile.NamedTemporaryFile("r", prefix="wheelcuda-nvcc-") as log:
            env = proc.child_environ({**(environ or {}), **p.variables,
                                      "WHEELCUDA_NVCC_LOG": log.name})
            start = time.monotonic()
            code = proc.call(p.argv, env=env)
            seconds = time.monotonic() - start
            compiles = compile_summary(log.read().splitlines())
    except filelock.Timeout as exc:
        raise CacheError(f"another install has held {lock} for 6 hours", f"remove {lock}") from exc
    took = _duration(seconds)
    if code != 0:
        return code, f"{p.tool.name} exited with {code} after {took}; nothing was installed"
    site = api.inspect(p.python).target.site_dirs
    done = [f"{n}=={v}" if (v := _version(site, n)) else (n or spec)
            for n, spec in zip(p.names, p.specs or [""] * len(p.names), strict=False)]
    builds.record(p.key, p.fields, done, seconds, p.tool.name)
    builds.keep_wheels(p.key, [n for n in p.names if n])
    archs = ", ".join(f"sm_{a.number}" for a in p.archs)
    built = archs if p.fields.get("prune") else "the package's own arch list (--all-archs)"
    how = (f"built {built} ({compiles})" if compiles
           else "from wheelcuda's wheel cache (nothing compiled)")
    return 0, (f"installed {', '.join(done)} with {p.tool.name} in {took}: {how}; "
               f"cache key {p.key}")


def _version(site_dirs: Sequence[str], name: str | None) -> str | None:
    if not name:
        return None
    return next((v for d in site_dirs if (v := locate.dist_version(d, name))), None)


def run_command(argv: Sequence[str], python: str | None, arch_list: str | None,
                all_archs: bool = False) -> int:
    """``wheelcuda run -- CMD``: CMD with the build environment; its exit code."""
    variables = run_environment(python, arch_list, os.environ, all_archs=all_archs)
    # No split here: cmake --build, make -j and others run their own job counts, which
    # the split's memory model (MAX_JOBS calls at once) would not hold for.
    variables.update(jobs.for_build(packages.job_gb([]), os.environ, split=False))
    return proc.call(argv, env=proc.child_environ(variables))
