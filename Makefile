# The bare target runs what CI runs.
PY ?= python3
export NUMBA_CACHE_DIR ?= $(CURDIR)/.numba-cache

.PHONY: test install lint jitoff bench demo

test: install
	$(PY) -m pytest -q -p no:cacheprovider
	NUMBA_DISABLE_JIT=1 $(PY) -m pytest -q -p no:cacheprovider tests/test_kernels.py tests/test_rank.py tests/test_rowtop.py tests/test_baselines_fast.py

install:
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,mcp,dask,parquet]'

lint:
	$(PY) -m ruff check brainbox kernels storage cli eval tests benchmarks

demo:
	$(PY) -m pip install -q . && brainbox demo

bench:
	asv run --python=same --quick --set-commit-hash $$(git rev-parse HEAD)
