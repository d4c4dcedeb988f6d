# The make targets are the interface: the same locally and in CI.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test check bench bench-peers test-llm test-ray clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test,dev,otel,mcp,experiments,lsp,harness,view]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python -m swarmflow.cli demo $(ARGS)

# The tests run in one worker per core (pytest-xdist); the second run repeats the operator tests
# with event validation off, as production runs. Where `make test-llm` installed the model
# packages, the real-model tests run here too, with its server flags.
test: $(STAMP)
	LLAMA_SERVER_ARGS="$(LLAMA_SERVER_ARGS)" $(BIN)/python -m pytest -q -n auto $(PYTEST_ARGS)
	$(BIN)/python -m pytest -q --production-events tests/operators $(PYTEST_ARGS)

check: $(STAMP)
	$(BIN)/ruff check swarmflow tests benchmarks examples
	$(BIN)/ruff format --check swarmflow
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m benchmarks $(ARGS)

# The peers (the `peers` extra: LangGraph, pydantic-graph) get a virtualenv of their own, so
# that the project's is never changed by them; ARGS="--venv PATH" measures in another one.
PEERS_VENV := .venv-peers
PEERS_STAMP := $(PEERS_VENV)/.installed

$(PEERS_STAMP): pyproject.toml
	test -x $(PEERS_VENV)/bin/python || $(PY) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install -q --disable-pip-version-check -e '.[peers]'
	touch $(PEERS_STAMP)

bench-peers: $(STAMP) $(PEERS_STAMP)
	$(BIN)/python -m benchmarks.peers --venv $(PEERS_VENV) $(ARGS)

# Builds llama-cpp-python (about 7 minutes on 2 cores). Some CPUs crash llama.cpp when it
# processes prompts in batches; LLAMA_SERVER_ARGS passes extra server flags to work around it.
LLAMA_SERVER_ARGS ?= --n_batch 1
test-llm: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[llm]'
	LLAMA_SERVER_ARGS="$(LLAMA_SERVER_ARGS)" $(BIN)/python -m pytest -m llm tests/llm $(PYTEST_ARGS)

# Installs the ray extra (about 80 MB, once per change of pyproject.toml) and runs the batch
# tests that need it on a local Ray head of 2 CPUs (about a minute on 2 cores). `make test`
# runs them too when Ray is installed, and skips them otherwise; `.ci/run` runs them here only.
RAY_STAMP := $(VENV)/.installed-ray

$(RAY_STAMP): pyproject.toml | $(STAMP)
	$(BIN)/python -m pip install -q -e '.[ray]'
	touch $(RAY_STAMP)

test-ray: $(STAMP) $(RAY_STAMP)
	$(BIN)/python -m pytest -q tests/batches/test_ray_batch.py tests/batches/test_ray_imports.py $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .venv-peers runs .pytest_cache .mypy_cache .ruff_cache

# The tests whose paths differ without bubblewrap, run once more as on a fresh machine without
# it (`.ci/without-bwrap` hides it from PATH): the host fallbacks keep their own promises.
.PHONY: test-without-bwrap
test-without-bwrap: $(STAMP)
	.ci/without-bwrap $(abspath $(BIN))/python -m pytest -q -n auto tests/harnesses tests/tools tests/feedback tests/experiments $(PYTEST_ARGS)
