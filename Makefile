# Two commands matter: `make serve` and `make test`. Both install into .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8080
ARGS ?=
# processes serving (auto: one per core)
WORKERS ?= 1
# processes running the test suite (pytest-xdist; 0 runs it in this one)
TEST_PROCESSES ?= 2
CHROMIUM ?= /usr/bin/chromium
export CHROMIUM

.PHONY: serve test lint typecheck unit chromium java postgresql wrk bench lab notebooks docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-base: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-docs: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed-base

# Extra options go in ARGS, e.g. a SNOMED CT release (imported once into the release cache):
#   make serve ARGS="--release SnomedCT_InternationalRF2_PRODUCTION_20250101T120000Z.zip"
#   make serve ARGS="--release 'path/to/rf2|http://snomed.info/xsct/31000003106/version/20250909'"
#   make serve ARGS="--release Loinc_2.80.zip --release SnomedCT_….zip"   (LOINC too; repeatable)
# One process per core, sharing what is loaded: make serve WORKERS=auto (or WORKERS=4)
serve: $(VENV)/.installed-base
	$(BIN)/python server.py --host $(HOST) --port $(PORT) --workers $(WORKERS) --data data $(ARGS)

# The browser test drives Debian's Chromium (Playwright never downloads a browser here).
chromium:
	@if [ ! -x $(CHROMIUM) ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing Debian's chromium for the browser test"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; \
	  else \
	    echo "Chromium is missing: install it with 'sudo apt-get install --no-install-recommends chromium'"; \
	    echo "or point CHROMIUM=/path/to/chromium at one; the browser test fails without it."; \
	  fi; \
	fi

# The Spark tests start a local Spark session, which needs a Java runtime (17 or later).
java:
	@if [ -z "$$JAVA_HOME" ] && ! command -v java >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing Debian's headless Java runtime for the Spark tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	      apt-get install -y -qq --no-install-recommends default-jre-headless >/dev/null; \
	  else \
	    echo "java is missing: install it with 'sudo apt-get install --no-install-recommends default-jre-headless'"; \
	    echo "(Debian/Ubuntu) or set JAVA_HOME to a Java 17+ runtime; the Spark tests fail without it."; \
	  fi; \
	fi

wrk:
	@if ! command -v wrk >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing Debian's wrk for the server benchmark"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wrk >/dev/null; \
	  else \
	    echo "wrk is missing: install it with 'sudo apt-get install --no-install-recommends wrk';"; \
	    echo "the server benchmark needs it."; \
	  fi; \
	fi

lint: $(VENV)/.installed-test
	$(BIN)/ruff check workbench tests benchmarks server.py setup.py docs/hooks.py
	$(BIN)/ruff format --check workbench tests benchmarks server.py setup.py docs/hooks.py

typecheck: $(VENV)/.installed-test
	$(BIN)/mypy

# The fleet tests (tests/test_fleet.py) start a real PostgreSQL server (initdb, pg_ctl).
postgresql:
	@if [ ! -x /usr/lib/postgresql/15/bin/initdb ] && ! command -v initdb >/dev/null 2>&1 \
	    && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing Debian's postgresql for the fleet tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	      apt-get install -y -qq --no-install-recommends postgresql >/dev/null; \
	  else \
	    echo "PostgreSQL is missing: install it with 'sudo apt-get install --no-install-recommends postgresql'"; \
	    echo "(Debian/Ubuntu); the fleet tests fail without it."; \
	  fi; \
	fi

unit: $(VENV)/.installed-test chromium java postgresql
	$(BIN)/python -m pytest workbench tests notebooks -n $(TEST_PROCESSES) --dist loadfile \
	  --nbval --nbval-sanitize-with tests/nbval_sanitize.cfg

test: java lint typecheck unit

bench: $(VENV)/.installed-test wrk
	$(BIN)/python benchmarks/bench_engine.py
	$(BIN)/python benchmarks/bench_bulk.py
	$(BIN)/python benchmarks/bench_server.py

# Jupyter refuses to run as root unless told: --allow-root only when root (as in a container).
lab: $(VENV)/.installed-test
	$(BIN)/jupyter lab notebooks/ $$(if [ "$$(id -u)" = 0 ]; then echo --allow-root; fi)

# Re-execute the notebooks in place (what nbval then compares), without storing widget state:
# widgets are rebuilt when a notebook runs, and their state would keep data and tokens.
notebooks: $(VENV)/.installed-test
	for nb in notebooks/*.ipynb; do \
	  $(BIN)/jupyter nbconvert --to notebook --execute --inplace \
	    --ExecutePreprocessor.store_widget_state=False "$$nb" || exit 1; \
	  $(BIN)/python -c "import json,sys; p=sys.argv[1]; nb=json.load(open(p)); \
	    nb['metadata'].pop('widgets', None); \
	    open(p, 'w').write(json.dumps(nb, indent=1, ensure_ascii=False) + '\n')" "$$nb"; \
	done

# The documentation site (mkdocs.yml, docs/) into site/; make test builds it in strict mode
# and runs its examples (tests/test_docs.py).
docs: $(VENV)/.installed-docs
	$(BIN)/python -m mkdocs build --strict

clean:
	rm -rf $(VENV) build site .pytest_cache .mypy_cache .ruff_cache
