# make demo  - the main job on the built-in example (examples/torch_ext)
# make test  - lint, type check, unit and integration tests (what .ci/run calls)
# make bench - benchmarks (benchmarks/), table in benchmarks/results.md
#
# Two virtual environments, made on first use:
#   .venv        wheelcuda itself (editable) with the test tools and uv
#   .venv-torch  a user's environment: torch 2.14.1 (CUDA 13.0 build, taken from this
#                machine's disk by pip) and NVIDIA's CUDA 13.0 compiler wheels
# Python 3.11 because torch 2.14.1 lies on this machine's disk for 3.11 only.

PYTHON ?= python3.11
VENV := .venv
TORCH_VENV := .venv-torch
TOOLKIT := cuda-toolkit[nvcc,cccl]==13.0.3
export WHEELCUDA_TEST_TORCH_VENV := $(abspath $(TORCH_VENV))

.PHONY: dev torch-venv lint unit test demo bench clean

dev: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -e '.[test]'
	touch $@

torch-venv: $(TORCH_VENV)/.installed
$(TORCH_VENV)/.installed:
	$(PYTHON) -m venv $(TORCH_VENV)
	$(TORCH_VENV)/bin/python -m pip install -q torch==2.14.1 '$(TOOLKIT)' setuptools wheel ninja
	touch $@

lint: dev
	$(VENV)/bin/ruff check src tests $(wildcard benchmarks)
	$(VENV)/bin/mypy

unit: dev
	$(VENV)/bin/python -m pytest -m "not integration"

test: dev torch-venv lint
	WHEELCUDA_REQUIRE_INTEGRATION=1 $(VENV)/bin/python -m pytest -m "not gpu"

demo: dev torch-venv
	bash examples/demo.sh $(VENV)/bin/wheelcuda $(TORCH_VENV)

bench: dev torch-venv
	$(VENV)/bin/python benchmarks/run.py --torch-venv $(TORCH_VENV)

clean:
	rm -rf $(VENV) $(TORCH_VENV) .pytest_cache .mypy_cache .ruff_cache
