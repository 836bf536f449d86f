# census-plb: every target installs what it needs into .venv first.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-slow bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,distributed]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/census-plb report --scenario dhc-persons

test: $(STAMP)
	$(PY) -m pytest -q tests accountant

test-slow: $(STAMP)
	$(PY) -m pytest -q -m 'slow or not slow' tests accountant

bench: $(STAMP)
	$(PY) -m bench.accountant

clean:
	rm -rf $(VENV) .pytest_cache
