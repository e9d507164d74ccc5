"""The settings uv-config writes for one package set: each package's build variables
(the tree, the archs, the recipe's, MAX_JOBS as a ceiling), torch's index and pins, and
the key variable whose line says what the binary depends on."""

from __future__ import annotations

from collections.abc import Sequence

from ... import _pipeline as pipeline
from ..._context import Context
from ..._pipeline import buildplan
from ..._probe import machine, uvforms
from ..._rules import arch, buildkey, jobs, packages, uvconfig, uvtorch
from ..._values import Torch
from ..common import note


def package_settings(r: pipeline.Resolved, version: str | None,
              found: Sequence[uvforms.Package], *, ctx: Context) -> list[uvconfig.Settings]:
    base = r.variables()
    archs = () if r.request.all_archs else r.archs
    key = buildplan.build_key(ctx, r, (), (), {}).label()
    # a name's setup.py is read from its sdist on the index uv takes it from
    places = [(p.url, p.flat) for p in uvforms.indexes(ctx)]
    out = []
    for package in found:
        name = package.name
        dependency, why = uvtorch.torch_entry(version)
        shown = "match-runtime" if isinstance(dependency, dict) else dependency
        note(f"{name}: {shown} ({why})")
        variables = dict(base)
        # The tree's bin only: uv puts the OS PATH after it, and this value is in uv's
        # cache key, so it must not change with the shell uv-config ran in.
        variables["PATH"] = str(r.home.path / "bin") if r.home else variables["PATH"]
        # what install sets for this source: its setup.py's switches (an sdist's or a
        # folder's FORCE_CUDA), then the recipe table's (chamferdist built CPU-only here)
        wanted, _ = buildplan.package_variables(ctx, [package.spec], [name], archs, places)
        variables.update({k: ctx.environ.get(k) or v for k, v in wanted.items()})
        # a ceiling, the same from run to run (it is in uv's key): the tree's compilers
        # decide how many run at once, and their threads, as each compile starts
        variables.update(jobs.for_build({}, machine.cores(),
                                        files=packages.known_files([name])))
        if ctx.get("MAX_JOBS"):
            variables["MAX_JOBS"] = ctx.environ["MAX_JOBS"]
        variables[uvconfig.KEY] = key
        out.append(uvconfig.Settings(name, dependency, variables))
    return out


def header(r: pipeline.Resolved, torch: Torch) -> list[str]:
    return [
        f"uv settings by `wheelcuda uv-config`: torch {torch.version} (CUDA {torch.cuda}),",
        f"{buildkey.compiler_name(r.compiler)} in {r.home.path if r.home else '?'}, "
        f"archs {arch.to_torch(r.archs) or '(all)'}.",
        "CUDA_HOME is a folder in this machine's wheelcuda cache: keep this file out of",
        "version control. Save it as uv.toml beside your project (or pass it with",
        "UV_CONFIG_FILE); run `wheelcuda uv-config` again after torch changes.",
    ]
