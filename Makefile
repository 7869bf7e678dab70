# Two commands for a fresh machine (README): `make demo` and `make test`.
# Everything else they need (the virtual environment, packages) they set up.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO := demo

.PHONY: demo test test-fast bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

# The main job, end to end on an embedded SQLite file, with readable output.
demo: $(STAMP)
	@rm -rf $(DEMO) && mkdir -p $(DEMO)
	@echo "== ledger init"; $(BIN)/ledger --db $(DEMO)/ledger.db init
	@echo "== ledger ingest fixtures/seed001-chunks.json"; $(BIN)/ledger --db $(DEMO)/ledger.db ingest fixtures/seed001-chunks.json
	@echo "== ledger chunks"; $(BIN)/ledger --db $(DEMO)/ledger.db chunks

# The whole suite, then the pure core again under `python -O` (no check may
# depend on `assert`).
test: $(STAMP)
	$(BIN)/python -m pytest -q
	$(BIN)/python -O -m pytest -q -p no:cacheprovider tests/core

bench: $(STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) $(DEMO) build *.egg-info .pytest_cache .hypothesis
