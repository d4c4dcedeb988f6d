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
	$(BIN)/python -m pip install -q -e '.[test,dev,otel,mcp]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python -m swarmflow.cli demo $(ARGS)

# The second run repeats the operator tests with event validation off, as production runs.
test: $(STAMP)
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)
	$(BIN)/python -m pytest -q --production-events tests/operators $(PYTEST_ARGS)

check: $(STAMP)
	$(BIN)/ruff check swarmflow tests benchmarks examples
	$(BIN)/ruff format --check swarmflow
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m benchmarks $(ARGS)

bench-peers: $(STAMP)
	$(BIN)/python -m benchmarks.peers $(ARGS)

# Builds llama-cpp-python (about 7 minutes on 2 cores). Some CPUs crash llama.cpp when it
# processes prompts in batches; LLAMA_SERVER_ARGS passes extra server flags to work around it.
LLAMA_SERVER_ARGS ?= --n_batch 1
test-llm: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[llm]'
	LLAMA_SERVER_ARGS="$(LLAMA_SERVER_ARGS)" $(BIN)/python -m pytest -m llm tests/llm $(PYTEST_ARGS)

# Installs the ray extra (about 80 MB) and runs the batch tests that need it on a local Ray
# head; `make test` runs them too when Ray is installed, and skips them otherwise.
test-ray: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[ray]'
	$(BIN)/python -m pytest -q tests/batches/test_ray_batch.py tests/batches/test_ray_imports.py $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) runs .pytest_cache .mypy_cache .ruff_cache
