# Two commands do all the set-up on a fresh machine:  `make run`  and  `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# The CPU wheel of torch; an unpinned torch would download a multi-GB CUDA build.
TORCH  ?= torch==2.13.0
export RAY_USAGE_STATS_ENABLED=0
export HF_HUB_OFFLINE=1
export TOKENIZERS_PARALLELISM=false

.PHONY: run test test-slow test-all install bench bench-peer clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "$(TORCH)"
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

# The main job on the embedded synthetic catalog and generated benchmark; no API key needed.
run: $(STAMP)
	$(PY) -m ecab.run $(ARGS)

# Two tiers (pyproject's `slow` marker): `make test`, the fast tier, is what a developer runs before a commit;
# `make test-all` (what CI runs, .ci/run) adds the slow tier. Both run on every core (pytest-xdist); tests
# marked with one xdist_group share one worker (--dist loadgroup): "ray" (one Ray at a time) and "view_runs"
# (one worker builds the report tests' two runs). XDIST= runs in one process.
XDIST ?= -n auto --dist loadgroup
test: $(STAMP)
	$(PY) -m pytest -q $(XDIST) -m "not slow" $(ARGS)

test-slow: $(STAMP)
	$(PY) -m pytest -q $(XDIST) -m slow $(ARGS)

test-all: test test-slow

bench: $(STAMP)
	$(PY) -m ecab.bench.search

# ecab vs inspect_ai on one simulated endpoint (inspect_ai gets its own venv under the cache on first use).
bench-peer: $(STAMP)
	$(PY) -m ecab.bench.peer $(ARGS)

clean:
	rm -rf $(VENV) runs .pytest_cache
