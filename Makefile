# `make test` and `make demo` work on a fresh clone: they build .venv themselves.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
# A second environment for the end-to-end layer: the same project under pytest 8.
VENV_PYTEST8 ?= .venv-pytest8
BIN_PYTEST8 := $(VENV_PYTEST8)/bin
INSTALLED_PYTEST8 := $(VENV_PYTEST8)/.installed
# pytest-xdist workers: this project is sized for a 2-core machine; `make test WORKERS=auto`.
# A module-scoped fixture is built once per worker that runs the module's tests: modules
# whose fixture is costly name an xdist_group, and e2e modules (mostly one costly fixture
# each) are sent whole to one worker.
WORKERS ?= 2
XDIST := -n $(WORKERS) --dist loadgroup
XDIST_E2E := -n $(WORKERS) --dist loadfile
FAST_LAYERS := tests/unit tests/commands
# Hypothesis tests of the fast layers that hold a fast path to its reference: `make test`
# runs them at the quick profile's strength, `make test-e2e` again at five times thorough's.
FAST_PATH_TESTS := tests/unit/test_jsonio.py tests/unit/test_ledgers_encode.py tests/unit/test_paths.py \
	tests/unit/test_measurement.py::test_a_record_line_is_the_text_json_dumps_makes

# The tests start hundreds of Python children (the CLI, pytest with the plugin). Where the
# environment sets PYTHONDONTWRITEBYTECODE, each would compile the package from source
# again; the caches go to __pycache__ folders that git ignores.
unexport PYTHONDONTWRITEBYTECODE

# pytest exits 5 when it collects nothing; make stops on any non-zero exit, so a layer that
# selects no test fails the target instead of passing silently.
.PHONY: test test-fast test-e2e lint typecheck coverage demo dist bench clean

test: lint typecheck coverage

$(INSTALLED): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

# pytest 8 reports sub-tests through the pytest-subtests plugin; pytest 9 has it built in.
$(INSTALLED_PYTEST8): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV_PYTEST8)
	$(BIN_PYTEST8)/python -m pip install --quiet --upgrade pip
	$(BIN_PYTEST8)/python -m pip install --quiet -e '.[test]' 'pytest>=8.4,<9' 'pytest-subtests>=0.14,<1'
	touch $@

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/vulture
	# Again without the tests: source code that only a test calls is dead as well.
	$(BIN)/vulture src tests/vulture_whitelist.py

typecheck: $(INSTALLED)
	$(BIN)/mypy

# The unit and command layers under coverage; every Python child they start is measured too
# (`patch = ["subprocess"]` in pyproject.toml), then combined and held to `fail_under`.
coverage: $(INSTALLED)
	rm -rf build/coverage
	# Made before any child starts: the sandbox keeps it writable for the measured children.
	mkdir -p build/coverage
	$(BIN)/coverage run -m pytest $(XDIST) --hypothesis-profile=quick $(FAST_LAYERS)
	$(BIN)/coverage combine --quiet
	$(BIN)/coverage report

# The same two layers without coverage and without their real pytest runs (the tests marked
# `pytest_child`, which make test runs): the quick loop while editing.
test-fast: $(INSTALLED)
	$(BIN)/pytest $(XDIST) --hypothesis-profile=quick -m "not pytest_child" $(FAST_LAYERS)

# The slow layer under pytest 9 (its fuzz tests and the fast path tests at full strength),
# then every test that starts a real pytest child again under pytest 8.
test-e2e: $(INSTALLED) $(INSTALLED_PYTEST8)
	$(BIN_PYTEST8)/python -c 'import pytest; assert pytest.version_tuple[0] == 8, pytest.__version__'
	$(BIN)/pytest $(XDIST_E2E) --hypothesis-profile=thorough tests/e2e $(FAST_PATH_TESTS)
	$(BIN_PYTEST8)/pytest $(XDIST_E2E) -m pytest_child tests

demo: $(INSTALLED)
	$(BIN)/three-ledger demo

# Every benchmark, each at a size that fits the whole in about 10 minutes on a quiet 2-core
# machine; benchmarks/README.md holds the figures, each with its full-size command. Run by
# hand, never in `make test`. markdown-it-py's suite is cloned from GitHub at its tag, and
# tomli's sdist from PyPI holds no tests (the trimmed copy in tests/data stands in); without
# GitHub, BENCH_SUITES=DIR names a folder holding a clone or mirror of each (DIR/tomli,
# DIR/markdown-it-py), which gives tomli's full suite too.
BENCH_SUITES ?=
bench: $(INSTALLED)
	$(BIN)/python benchmarks/bench_startup.py --runs 21
	$(BIN)/python benchmarks/bench_imports.py --command properties --runs 21
	if command -v valgrind >/dev/null; then $(BIN)/python benchmarks/count_instructions.py --tests 5; \
	else echo "count_instructions.py: skipped, valgrind is not installed"; fi
	$(BIN)/python benchmarks/bench_properties.py --tests 2000 --runs 5 --cpu
	$(BIN)/python benchmarks/bench_real_suite.py --suite tomli --runs 3 $(if $(BENCH_SUITES),--suite-source $(BENCH_SUITES)/tomli)
	$(BIN)/python benchmarks/bench_real_suite.py --suite markdown-it-py --runs 3 $(if $(BENCH_SUITES),--suite-source $(BENCH_SUITES)/markdown-it-py)
	$(BIN)/python benchmarks/bench_shards.py --tests 20000 --properties 200 --runs 1
	$(BIN)/python benchmarks/bench_digest.py --runs 3 --shape large-8x128MiB --shape small-100000x1KiB
	$(BIN)/python benchmarks/bench_vet.py --jobs --runs 3
	$(BIN)/python benchmarks/bench_flake.py --runs 3

# The sdist and a wheel, to install where the repository is not checked out: pip install
# dist/three_ledger-*.whl. `python -m build` makes the wheel from the sdist, as an index would.
dist: $(INSTALLED)
	rm -rf dist
	$(BIN)/python -m build --outdir dist .

clean:
	rm -rf $(VENV) $(VENV_PYTEST8) dist ledgers build/coverage htmlcov
	rm -rf .mypy_cache .pytest_cache .ruff_cache .hypothesis
