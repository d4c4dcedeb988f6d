# The make targets are the interface: the same locally and in CI.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test check bench bench-peers test-llm clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test,dev,otel,mcp]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python -m swarmflow.cli demo $(ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

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

clean:
	rm -rf $(VENV) runs .pytest_cache .mypy_cache .ruff_cache
