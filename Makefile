# Two commands matter: `make serve` and `make test`. Both install into .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8080
ARGS ?=

.PHONY: serve test lint typecheck unit bench lab clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-base: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed-base

serve: $(VENV)/.installed-base
	$(BIN)/python server.py --host $(HOST) --port $(PORT) $(ARGS)

lint: $(VENV)/.installed-test
	$(BIN)/ruff check workbench tests benchmarks server.py
	$(BIN)/ruff format --check workbench tests benchmarks server.py

typecheck: $(VENV)/.installed-test
	$(BIN)/mypy

unit: $(VENV)/.installed-test
	$(BIN)/python -m pytest

test: lint typecheck unit

bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/bench_engine.py

lab: $(VENV)/.installed-test
	$(BIN)/jupyter lab notebooks/

clean:
	rm -rf $(VENV) build .pytest_cache .mypy_cache .ruff_cache
