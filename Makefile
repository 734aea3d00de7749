# The two commands a newcomer needs: `make demo` and `make test`. Both create the environment.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
AIRFLOW_VERSION ?= 3.3.2
CONSTRAINTS := constraints/airflow-$(AIRFLOW_VERSION).txt
# Bytecode caches are written, whatever the shell says: our venvs are installed with uv, which writes
# none, and with PYTHONDONTWRITEBYTECODE set (as on the developers' machines and CI) every process
# compiled Airflow again from source: `import airflow` took 5.0 CPU-s instead of 2.6, a version-tier run
# 177 CPU-s instead of 146. An installed package has its caches (pip writes them); so do ours.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test test-matrix test-matrix-env lint docs bench dist wheel-smoke constraints check clean e2e e2e-env
.PHONY: dbt-artifacts
.PHONY: try-locally
.PHONY: help
.DEFAULT_GOAL := help

help:  ## this list (also `make` alone): each target and what it does, from its `##` comment
	@awk -v airflow=$(AIRFLOW_VERSION) 'BEGIN { FS = ":[^#]*## " } /^[a-z][a-z0-9-]*:.*## / \
		{ gsub(/\$$\(AIRFLOW_VERSION\)/, airflow, $$2); printf "  make %-12s %s\n", $$1, $$2 }' $(firstword $(MAKEFILE_LIST))

# Airflow and the provider (editable, with the dev, bench and openlineage extras), held to the constraints file; one line
# per step with its time (pip's own output: $(VENV)/install.log).
$(VENV)/.installed: pyproject.toml $(CONSTRAINTS)
	$(PYTHON) scripts/envs.py $(VENV) --airflow $(AIRFLOW_VERSION) --extras dev,bench,openlineage

demo: $(VENV)/.installed  ## run the example DAGs through Airflow against the local emulator
	$(PY) scripts/demo.py

# two per core, eight at most (each holds Airflow and its own database): most of a test's time is spent
# waiting (on the emulator's jobs, triggers' intervals, subprocesses); on two cores 1,883 tests took
# 295 s with 2 processes, 208 s with 4, 220 s with 6
TEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(min(8, 2 * (os.cpu_count() or 1)))')
test: $(VENV)/.installed  ## the whole test suite, on Airflow $(AIRFLOW_VERSION), two processes per core
	$(PY) -m pytest -n $(TEST_WORKERS) --dist worksteal --allowed-skips tests/allowed_skips.txt

MATRIX_JOBS ?= 2
test-matrix:  ## the suite on every supported Airflow and Python, one venv each (.matrix/): scripts/test_matrix.py
	$(PYTHON) scripts/test_matrix.py --jobs $(MATRIX_JOBS)

test-matrix-env:  ## only create or update the venvs of make test-matrix (.matrix/)
	$(PYTHON) scripts/test_matrix.py --install-only

lint: $(VENV)/.installed  ## ruff on the code, tests, examples and scripts; mypy on the package and the scripts
	$(VENV)/bin/ruff check analytics_provider tests example_dags benchmarks scripts docs/_ext
	$(VENV)/bin/mypy analytics_provider
	$(VENV)/bin/mypy scripts/*.py

docs: $(VENV)/.installed  ## the Sphinx site into docs/_build/html, warnings as errors
	$(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html

bench: $(VENV)/.installed  ## benchmarks (not tests): download and upload memory, trigger CPU, a poll's functions, shared quota, access sync at scale, refresh by impact, operator import time
	$(PY) benchmarks/run_all.py

dist: $(VENV)/.installed  ## sdist and wheel into dist/, checked by twine
	rm -rf dist
	$(PY) -m build --outdir dist .
	$(VENV)/bin/twine check --strict dist/*

SMOKE_AIRFLOW ?= $(AIRFLOW_VERSION) 2.11.2
wheel-smoke: dist  ## install the wheel into fresh venvs outside the checkout (Airflow 3 and 2.11) and try it there
	$(PYTHON) scripts/wheel_smoke.py dist/*.whl --airflow $(SMOKE_AIRFLOW)

dbt-artifacts:  ## remake tests/dbt_artifacts/ with real dbt (its own .venv-dbt): scripts/dbt_artifacts.py
	$(PYTHON) scripts/dbt_artifacts.py

constraints:  ## regenerate constraints/ (AIRFLOW=3.2.2 for one version); needs PyPI
	$(PYTHON) scripts/make_constraints.py $(AIRFLOW)

E2E_VENV ?= .venv-e2e
# The production shape: PostgreSQL, Celery on Redis (installed from Debian's packages when missing),
# two workers, two triggerers, a forward proxy; Airflow installed as production installs it.
e2e: e2e-env  ## the example DAGs and failures on the production stack (minutes; not in `make test`)
	$(E2E_VENV)/bin/python scripts/e2e.py

e2e-env:  ## only install what make e2e needs: its venv, and PostgreSQL, Redis and Chromium from Debian's packages
	$(PYTHON) scripts/envs.py $(E2E_VENV) --airflow $(AIRFLOW_VERSION) --extras dev --airflow-extras celery,postgres
	$(E2E_VENV)/bin/python scripts/e2e.py --install-only

try-locally: $(VENV)/.installed  ## run the "Try it locally" commands of docs/reviewed_changes.rst as written (about 2 minutes; make e2e runs them too)
	$(PY) scripts/try_locally.py

check: test lint docs  ## make test, make lint and make docs

clean:  ## remove what the commands write here but the venvs (.demo, docs/_build, caches, dist, build)
	rm -rf .demo docs/_build .pytest_cache .mypy_cache .ruff_cache dist build
