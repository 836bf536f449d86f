# census-plb: every target installs what it needs into .venv first.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo lint test test-slow bench clean browser screenshots

# the packages whose doctests run with the tests (see [tool.pytest.ini_options] in pyproject.toml)
PACKAGES := accountant optimizer scenarios bench explorer

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,distributed,bench,explorer]"
	touch $(STAMP)

# writes runs/dhc-persons/report/ (git-ignored); the committed reports/ change only with --publish
demo: $(STAMP)
	$(VENV)/bin/census-plb report --scenario dhc-persons

# headless Chromium (Debian packages) for the report's browser test; best effort: without root
# or apt the test reports itself skipped with the command to run
browser:
	@if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
	  || echo "make: could not install chromium (the browser test will be skipped)"; fi

# ruff lint, the formatter's check and mypy (configured in pyproject.toml); zero findings expected
lint: $(STAMP)
	$(VENV)/bin/ruff check $(PACKAGES) tests
	$(VENV)/bin/ruff format --check $(PACKAGES) tests
	$(VENV)/bin/mypy

# lint first, then the tests and the doctests of every package (the slow checks are left out), in
# TEST_WORKERS processes (pytest-xdist; a file's tests stay in one process) and the 25 slowest named
TEST_WORKERS ?= 2
test: $(STAMP) browser lint
	$(PY) -m pytest -q -rs -n $(TEST_WORKERS) --dist loadfile --durations=25 tests $(PACKAGES)

# everything, the slow checks included (all 946 pairs, full benchmarks)
test-slow: $(STAMP)
	$(PY) -m pytest -q -m 'slow or not slow' tests $(PACKAGES)

# the README's screenshot of the committed report's first screen (from its browser test)
screenshots: $(STAMP) browser
	CENSUS_PLB_SCREENSHOTS=docs/img $(PY) -m pytest -q tests/test_report_browser.py tests/test_explorer_browser.py -k "first_screen or readme_screenshot"

bench: $(STAMP)
	$(PY) -m bench.accountant

clean:
	rm -rf $(VENV) .pytest_cache
