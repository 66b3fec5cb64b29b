# Two commands from a fresh clone: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-full test-costs fuzz bench clean

$(STAMP): pyproject.toml
	@echo "setting up $(VENV) (log: $(VENV)/install.log)"
	@$(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --upgrade pip > $(VENV)/install.log 2>&1 || (cat $(VENV)/install.log; exit 1)
	@$(PY) -m pip install -e '.[test,mpi]' >> $(VENV)/install.log 2>&1 || (cat $(VENV)/install.log; exit 1)
	@touch $(STAMP)

demo: $(STAMP)
	@for f in examples/step*.py; do $(PY) $$f || exit 1; done
	@$(PY) examples/custom_matmul.py

# The quick tier (CI): every instruction and dtype on a few shapes. The full tier adds the
# cases marked slow (exhaustive sweeps, large shapes).
# --dist loadfile keeps each file's tests on one worker: they share its kernels, which with an
# empty cache only one worker then compiles (--dist worksteal, cold: 29 % of the tests done after
# 14 minutes, where loadfile ran them all in 13 min 44 s). --no-loadscope-reorder keeps the
# conftest's order, heaviest file first (tests/file_costs.json).
XDIST := -n auto --dist loadfile --no-loadscope-reorder

test: $(STAMP)
	$(PY) -m pytest -q $(XDIST) -m "not slow" tests conformance

test-full: $(STAMP)
	$(PY) -m pytest -q $(XDIST) tests conformance

# Re-measures tests/file_costs.json: seconds per test file of the quick tier with empty caches.
test-costs: $(STAMP)
	d=$$(mktemp -d) && PYPTO_CACHE_DIR=$$d/k NUMBA_CACHE_DIR=$$d/n PYPTO_RECORD_FILE_COSTS=tests/file_costs.json \
		$(PY) -m pytest -q $(XDIST) -p no:cacheprovider -m "not slow" tests conformance; s=$$?; rm -rf $$d; exit $$s

# The long fuzz run: every tests/test_fuzz_*.py test with 10,000 examples (about 10 minutes on
# 2 cores); `make test` runs the same tests with a few hundred examples each.
fuzz: $(STAMP)
	$(PY) -m pytest -q $(XDIST) -p no:cacheprovider --hypothesis-profile=fuzz \
		tests/test_fuzz_api.py tests/test_fuzz_dsl.py tests/test_fuzz_idl.py

bench: $(STAMP)
	$(PY) benchmarks/seed_table.py
	$(PY) benchmarks/throughput.py
	$(PY) benchmarks/compile_time.py
	$(PY) benchmarks/softmax.py
	$(PY) benchmarks/gemm.py
	$(PY) benchmarks/checks_cost.py
	$(PY) benchmarks/goals.py
	$(PY) benchmarks/vs_ptoisa.py
	$(PY) benchmarks/calibration.py
	$(PY) benchmarks/timeline_cost.py
	$(PY) benchmarks/comm.py
	$(PY) benchmarks/reliability.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
