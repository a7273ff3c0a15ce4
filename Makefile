# Entry points for a fresh machine (only Python needed): `make demo` and `make test`.
# `make demo` installs privamp alone (numpy, scipy, mpmath, tqdm); the test targets add the
# dev extra (reference libraries, torch, ...).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
BASE   := $(VENV)/.installed
STAMP  := $(VENV)/.installed-dev

.PHONY: demo test test-fast bench lint clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(BASE): $(PY) pyproject.toml
	$(PY) -m pip install --quiet -e .
	touch $(BASE)

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(BASE) $(STAMP)

demo: $(BASE)
	$(VENV)/bin/privamp demo

test: $(STAMP)
	$(PY) -m pytest -n 2 -q

# the tests not marked slow (@pytest.mark.slow): under two minutes on two cores
test-fast: $(STAMP)
	$(PY) -m pytest -n 2 -q -m "not slow"

# ruff, then mypy on src/privamp (configured in pyproject.toml [tool.mypy])
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) -m pip install --quiet -e ".[bench]"
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
