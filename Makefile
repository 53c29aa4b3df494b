# `make test` and `make demo` work on a fresh clone: they build .venv themselves.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
LEDGERS := ledgers/example

.PHONY: test lint typecheck pytest demo clean

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
	$(BIN)/three-ledger digest --pin examples/orders/pins/fixtures.json \
		--root examples/orders --out $(LEDGERS)/fixture_a.json
	$(BIN)/three-ledger digest --pin examples/orders/pins/fixtures_b.json \
		--root examples/orders --out $(LEDGERS)/fixture_b.json
	$(BIN)/three-ledger dual-pin --not-run --out $(LEDGERS)/drift.json
	@for ledger in $(LEDGERS)/*.json; do echo "== $$ledger"; cat "$$ledger"; done

clean:
	rm -rf $(VENV) ledgers .mypy_cache .pytest_cache .ruff_cache
