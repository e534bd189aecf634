# torch_inplace — one entry point for people and CI.
#   make demo   set everything up (venv, torch, build) and run the demo
#   make test   set everything up and run the whole test suite (Python, C++, HIP compile check)
PYTHON ?= python3
VENV ?= .venv
TORCH_VERSION ?= 2.11.0
JOBS ?= $(shell nproc)
PY := $(VENV)/bin/python
export MAX_JOBS ?= $(JOBS)
# TORCH_CUDA_ARCH_LIST is left to setup.py: the visible GPUs' own architectures, or 9.0 where none is visible.

.PHONY: venv build demo test test-python test-cpp test-hip check-cuda bench-cpu clean

$(VENV)/.deps-$(TORCH_VERSION):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "torch==$(TORCH_VERSION)" numpy pytest expecttest ninja setuptools wheel
	touch $@

venv: $(VENV)/.deps-$(TORCH_VERSION)

# Editable install: builds torch_inplace._C in place (CUDA sources too when torch's CUDA matches nvcc).
build: venv
	$(PY) -m pip install --no-build-isolation -e . -q

demo: build
	$(PY) benchmarks/demo.py

test-python: build
	cd tests && ../$(PY) -m pytest -q

test-cpp: venv
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" PYTHON=$(PY) bash tools/cpp_test.sh

# Needs Debian's hipcc (apt-get install -y hipcc); CI installs it and always runs this check. The venv's torch
# provides hipify, which turns the CUDA sources into what a ROCm build compiles.
test-hip: venv
	@if command -v hipcc >/dev/null 2>&1 || [ -n "$$CI" ]; then PYTHON=$(PY) bash tools/hip_check.sh; \
	else echo "test-hip: skipped: hipcc is not installed (apt-get install -y hipcc); CI runs this check"; fi

# Compile every CUDA source for sm_90 even where the full build is CPU-only (torch's CUDA != nvcc's).
check-cuda: venv
	PYTHON=$(PY) bash tools/cuda_compile_check.sh

test: test-python test-cpp test-hip check-cuda

bench-cpu: build
	$(PY) benchmarks/bench_transpose_cpu.py

clean:
	rm -rf build torch_inplace/_C*.so *.egg-info cmake-build
