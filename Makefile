# The bare target runs what CI runs.
PY ?= python3
export NUMBA_CACHE_DIR ?= $(CURDIR)/.numba-cache

.PHONY: test install lint jitoff bench demo

# Lint first: a finding fails the target before any test runs. Then both passes run
# even when the first fails (the JIT-off pass checks the kernels' Python path), and the
# target fails when either did. The first pass runs both tiers: a bare `pytest` leaves
# out the tests marked slow (pyproject's addopts), `-m "slow or not slow"` puts them back.
test: install lint
	@rc=0; \
	$(PY) -m pytest -q -p no:cacheprovider -m "slow or not slow" || rc=1; \
	NUMBA_DISABLE_JIT=1 $(PY) -m pytest -q -p no:cacheprovider -m "slow or not slow" tests/test_kernels.py tests/test_rank.py tests/test_rowtop.py tests/test_baselines_fast.py tests/test_parity.py tests/test_policy.py || rc=1; \
	exit $$rc

install:
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,mcp,dask,parquet,plot]'

lint:
	$(PY) -m ruff check brainbox kernels storage cli eval tests benchmarks

demo:
	$(PY) -m pip install -q . && brainbox demo

bench:
	asv run --python=same --quick --set-commit-hash $$(git rev-parse HEAD)
