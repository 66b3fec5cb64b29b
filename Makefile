# Two commands from a fresh clone: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	@for f in examples/step*.py; do $(PY) $$f || exit 1; done

test: $(STAMP)
	$(PY) -m pytest -q tests conformance

bench: $(STAMP)
	$(PY) benchmarks/seed_table.py
	$(PY) benchmarks/throughput.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
