# make demo  - the main job on the built-in example (examples/torch_ext)
# make test  - lint, type check, unit and integration tests (what .ci/run calls)
# make bench - benchmarks (benchmarks/), table in benchmarks/results.md
# make live  - every route against what PyPI serves today (what .ci/run also runs)
#
# Virtual environments, made on first use:
#   .venv         wheelcuda itself (editable) with the test tools and uv
#   .venv-torch   a bare user environment: torch 2.14.1 (CUDA 13.0 build, taken from this
#                 machine's disk by pip) and the build needs, no compiler wheels
#                 (`wheelcuda install` fetches them into its store)
#   .venv-wheels  sees .venv-torch's packages (a .pth file, like --system-site-packages)
#                 and holds NVIDIA's CUDA 13.0 compiler wheels itself
#   .venv-cu128   torch 2.9.1 from PyPI (built with CUDA 12.8, the first user's kind) with
#                 no dependencies: enough for doctor and `install --explain` of the cu12
#                 plan (NVIDIA's archives), which the tests check against the real manifest
# Python 3.11 because torch 2.14.1 lies on this machine's disk for 3.11 only.

PYTHON ?= python3.11
VENV := .venv
TORCH_VENV := .venv-torch
WHEELS_VENV := .venv-wheels
CU128_VENV := .venv-cu128
CU128_FULL_VENV := .venv-cu128-full
TOOLKIT := cuda-toolkit[nvcc,cccl]==13.0.3
# one folder per run (a name only: pytest makes it), so that runs side by side never remove
# each other's folders
LIVE_TMP := $(shell mktemp -u /tmp/wheelcuda-live-XXXXXX)
TEST_TMP := $(shell mktemp -u /tmp/wheelcuda-test-XXXXXX)
# free space make test needs in /tmp: 11.7 and 12.1 GB at the peak of two fresh clones'
# runs (2026-12-01), the module-wide build environments of the backend and uv tests
TEST_NEEDS_GB ?= 14
# free space make live needs in /tmp: 24 GB over its start at its peak (a df sampler every
# 5 s, 2026-12-07: torch in uv's cache twice, pip's build environments, the venvs)
LIVE_NEEDS_GB ?= 30
# A run holds its folder's lock (flock) while it runs: a folder whose lock nobody holds is a
# killed run's, removed before the next run starts. A killed run's folders and pip's build
# environments (5.2 GB each) came to 38 GB, and the next run's pip failed with "No space
# left on device" (2026-12-07).
SWEEP := for l in /tmp/wheelcuda-live-*.lock /tmp/wheelcuda-test-*.lock; do \
    [ -e "$$l" ] && flock -n "$$l" rm -rf "$${l%.lock}" "$$l"; done; true
# $(call need_free,TARGET,GB): stop with the fix when /tmp has less than GB free
need_free = free=$$(df -Pk /tmp | awk 'NR==2 {print int($$4 / 1048576)}'); \
    if [ "$$free" -lt $(2) ]; then \
    echo "make $(1): needs about $(2) GB free in /tmp (builds unpack torch into their build environments); $$free GB are free. Free some (rm -rf /tmp/pytest-of-$$(id -un); wheelcuda cache prune) and run it again." >&2; \
    exit 1; fi
CORPUS_ROUTES := $(or $(ROUTES),install$(comma)uv-pip$(comma)pip)
comma := ,
export WHEELCUDA_TEST_TORCH_VENV := $(abspath $(TORCH_VENV))
export WHEELCUDA_TEST_WHEELS_VENV := $(abspath $(WHEELS_VENV))
export WHEELCUDA_TEST_CU128_VENV := $(abspath $(CU128_VENV))

.PHONY: dev torch-venv wheels-venv cu128-venv cu128-full-venv clang-cu128 lint unit test live corpus demo bench causal-conv1d uv-add-causal-conv1d gpu-toolkits b11 b11-flash-attn b11-poll clean settings-docs

dev: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -e '.[test]'
	touch $@

torch-venv: $(TORCH_VENV)/.installed
$(TORCH_VENV)/.installed:
	$(PYTHON) -m venv $(TORCH_VENV)
	$(TORCH_VENV)/bin/python -m pip install -q torch==2.14.1 numpy setuptools wheel ninja packaging
	touch $@

wheels-venv: $(WHEELS_VENV)/.installed
$(WHEELS_VENV)/.installed: $(TORCH_VENV)/.installed
	$(PYTHON) -m venv $(WHEELS_VENV)
	$(TORCH_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' \
	    > $(WHEELS_VENV)/lib/python3.11/site-packages/torch-venv.pth
	$(WHEELS_VENV)/bin/python -m pip install -q --ignore-installed '$(TOOLKIT)' 'setuptools>=77' wheel
	touch $@

# torch 2.9.1+cu128 with all its CUDA 12 dependencies (about 7 GB), for `make clang-cu128`
cu128-full-venv: $(CU128_FULL_VENV)/.installed
$(CU128_FULL_VENV)/.installed:
	$(PYTHON) -m venv $(CU128_FULL_VENV)
	$(CU128_FULL_VENV)/bin/python -m pip install -q torch==2.9.1 numpy setuptools wheel ninja packaging
	touch $@

cu128-venv: $(CU128_VENV)/.installed
$(CU128_VENV)/.installed:
	$(PYTHON) -m venv $(CU128_VENV)
	$(CU128_VENV)/bin/python -m pip install -q --no-deps torch==2.9.1 setuptools wheel ninja packaging
	touch $@

lint: dev
	$(VENV)/bin/ruff check src tests $(wildcard benchmarks corpus tools)
	$(VENV)/bin/mypy

unit: dev
	$(VENV)/bin/python -m pytest -m "not integration"

# The tables of environment variables in README.md and docs/development.md, from the
# registry (src/wheelcuda/data/settings.py); tests/test_settings.py fails when they differ.
settings-docs:
	$(PYTHON) tools/settings_docs.py

# pytest's own folders go to TEST_TMP and are removed after the run: the builds unpack
# torch into several build environments (GBs), and pytest would keep the last three runs.
# A passed test's folder is removed as soon as it ends (tests/conftest.py); the peak is
# what the largest tests hold at once, checked up front (TEST_NEEDS_GB).
test: dev torch-venv wheels-venv cu128-venv lint
	@$(SWEEP)
	@$(call need_free,test,$(TEST_NEEDS_GB))
	flock $(TEST_TMP).lock sh -c 'WHEELCUDA_REQUIRE_INTEGRATION=1 exec $(VENV)/bin/python \
	    -m pytest -m "not gpu and not live" --basetemp=$(TEST_TMP) -p no:cacheprovider'; \
	    code=$$?; rm -rf $(TEST_TMP) $(TEST_TMP).lock; exit $$code

# Against what PyPI serves today (the newest torch, and the newest cu128 one for sm_120,
# with the newest CUDA wheels on offer): every route builds the example, isolation on,
# system toolkit hidden. Downloads torch (about 3 GB each); leaves nothing behind. pip's
# and uv's temporary folders (pip copies torch into each isolated build environment, 5.2
# GB) go into the run's own folder, so that a killed run's are swept with it.
live: dev
	@$(SWEEP)
	@$(call need_free,live,$(LIVE_NEEDS_GB))
	flock $(LIVE_TMP).lock sh -c 'mkdir -p $(LIVE_TMP)/tmp && TMPDIR=$(LIVE_TMP)/tmp exec \
	    $(VENV)/bin/python -m pytest -m live tests/live --basetemp=$(LIVE_TMP)/run \
	    -p no:cacheprovider'; code=$$?; rm -rf $(LIVE_TMP) $(LIVE_TMP).lock; exit $$code

demo: dev torch-venv
	bash examples/demo.sh $(VENV)/bin/wheelcuda $(TORCH_VENV)

# About 3 min on 2 cores (3m16s on 2026-12-01: pruned to ARCH, 9.0 by default, compiler
# fetch included): causal-conv1d 1.7.0 from its sdist, system toolkit hidden.
causal-conv1d: dev torch-venv
	bash examples/causal_conv1d.sh $(abspath $(VENV))/bin/wheelcuda $(TORCH_VENV) $(or $(ARCH),9.0)

# The clang toolkit (CUDA 12 without nvcc) end to end under a whole cu128 torch, system toolkit hidden:
# examples/torch_ext and causal-conv1d built with --toolkit clang, archs checked, imported.
# About 6 min on 2 cores; needs clang-22 (apt install clang-22).
clang-cu128: dev cu128-full-venv
	bash examples/clang_cu128.sh $(abspath $(VENV))/bin/wheelcuda $(CU128_FULL_VENV) \
	    $$(ls $(VENV)/lib/python*/site-packages/nvidia/cu*/bin/cuobjdump) $(or $(ARCH),9.0)

# On the GPU machine (no network; ../shared/GPU.md): causal-conv1d 1.7.0 by an unchanged
# `uv add` after `wheelcuda uv-config`, isolation on, its kernels checked against its
# reference. WHEELS holds the compiler wheels, tomlkit and the sdist; VENV has torch.
uv-add-causal-conv1d:
	sh examples/gpu_uv_add.sh $(CURDIR) $(or $(TORCH_ENV),/opt/torch/.venv) $(WHEELS)

# On the GPU machine: the compiler from NVIDIA's archives (a mirror on 127.0.0.1 made of
# the carried CUDA 13 wheels), system toolkit hidden: the example and causal-conv1d built
# with --toolkit redist and checked; then the example with --toolkit local.
gpu-toolkits:
	sh examples/gpu_redist.sh $(CURDIR) $(or $(TORCH_ENV),/opt/torch/.venv)/bin/python3 $(WHEELS)

# B11, on the GPU machine: causal-conv1d and flash-attn from their sdists in .gpu/ (no
# network there), --toolkit local, sm_90: wall, CPU, busy cores, peak memory, the floor,
# kernels checked. flash-attn runs longer than one call: `make b11-poll` until it is done,
# then `python examples/b11_build.py --analyse` on what it copied to $OUT.
b11:
	PY=$(or $(TORCH_ENV),/opt/torch/.venv)/bin/python3 sh examples/b11_gpu.sh start
b11-flash-attn:
	PY=$(or $(TORCH_ENV),/opt/torch/.venv)/bin/python3 sh examples/b11_gpu.sh flash-attn
b11-poll:
	sh examples/b11_gpu.sh poll

# Real CUDA-extension packages from PyPI (corpus/packages.toml, where = "here") built by
# each route, --arch 9.0, system toolkit hidden; results in corpus/results/here.json and
# docs/compat.md. Hours on 2 cores: ONLY=name,name and ROUTES=install,uv-pip,pip narrow it.
corpus: dev torch-venv
	$(VENV)/bin/python corpus/run.py --where here --arch $(or $(ARCH),9.0) \
	    --routes $(CORPUS_ROUTES) $(if $(ONLY),--only $(ONLY))

bench: dev torch-venv wheels-venv
	$(VENV)/bin/python benchmarks/run.py --torch-venv $(TORCH_VENV)

clean:
	rm -rf $(VENV) $(TORCH_VENV) $(WHEELS_VENV) $(CU128_VENV) $(CU128_FULL_VENV) .pytest_cache .mypy_cache .ruff_cache
