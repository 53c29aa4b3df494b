# `make test` and `make demo` work on a fresh clone: they build .venv themselves.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed

.PHONY: test lint typecheck pytest demo dist clean

$(INSTALLED): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

test: lint typecheck pytest

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(INSTALLED)
	$(BIN)/mypy

# pytest exits 5 when it collects nothing; make stops on any non-zero exit.
pytest: $(INSTALLED)
	$(BIN)/pytest

demo: $(INSTALLED)
	$(BIN)/three-ledger demo

# A wheel to install where the repository is not checked out: pip install dist/three_ledger-*.whl
dist: $(INSTALLED)
	rm -rf dist
	$(BIN)/python -m pip wheel --quiet --no-deps --wheel-dir dist .

clean:
	rm -rf $(VENV) dist ledgers .mypy_cache .pytest_cache .ruff_cache
