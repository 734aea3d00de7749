# The two commands a newcomer needs: `make demo` and `make test`. Both create the environment.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
AIRFLOW_VERSION ?= 3.3.2

.PHONY: demo test lint docs bench check clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]" "apache-airflow==$(AIRFLOW_VERSION)"
	touch $@

demo: $(VENV)/.installed  ## run the example DAGs through Airflow against the local emulator
	$(PY) scripts/demo.py

test: $(VENV)/.installed  ## the whole test suite
	$(PY) -m pytest

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check analytics_provider tests example_dags benchmarks scripts
	$(VENV)/bin/mypy analytics_provider

docs: $(VENV)/.installed
	$(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html

bench: $(VENV)/.installed  ## benchmarks (not tests): download and upload memory, trigger CPU, shared quota
	$(PY) -m pip install --quiet -e ".[bench]" "apache-airflow==$(AIRFLOW_VERSION)"
	$(PY) benchmarks/download_memory.py
	$(PY) benchmarks/upload_memory.py
	$(PY) benchmarks/trigger_polling.py
	$(PY) benchmarks/shared_quota.py

check: test lint docs

clean:
	rm -rf .demo docs/_build .pytest_cache .mypy_cache .ruff_cache
