# The two commands of the README: `make quickstart` (the main job) and `make test`.
PYTHON ?= python3
# Test processes (pytest-xdist): each has its own SparkSession, shared by the tests it runs;
# `--dist loadfile` keeps a file's tests, and so its module fixtures, in one process.
WORKERS ?= 2
PARALLEL = -n $(WORKERS) --dist loadfile

.PHONY: quickstart test test-heavy test-no-rename stress-full test-binder test-bench model-full lab bench lint setup

quickstart:
	@bash scripts/setup.sh
	$(PYTHON) examples/quickstart.py

# Everything but the stress tests (CI runs those at full size, with `make stress-full`) and the
# heavy modules (CI runs them next, with `make test-heavy`).
test:
	@bash scripts/setup.sh --test
	$(PYTHON) -m pytest -m "not stress and not heavy" $(PARALLEL) --durations=30

# The heavy modules: object storage on loopback servers, tutorials on a kernel, JupyterLab in
# Chromium, the long differential and regression runs (tests/conftest.py HEAVY).
test-heavy:
	@bash scripts/setup.sh --test
	$(PYTHON) -m pytest -m "heavy and not stress" $(PARALLEL) --durations=20

# The table, concurrency and Iceberg tests that run without Spark, over a FileIO that never
# renames or links (evonb.table.fileio): the commit protocol needs neither (CI runs this after
# `make test`). The commit protocol is evonb's own Python code, which Spark's writes and the
# services reach through the same Transaction; tests/architecture/test_file_access.py holds all
# of evonb to no rename or link outside the local FileIO. NO_RENAME_TESTS="" runs the Spark
# tests of those folders that way too.
NO_RENAME_TESTS ?= -m "not spark"
test-no-rename:
	@bash scripts/setup.sh --test
	EVONB_FILE_IO=local-no-rename $(PYTHON) -m pytest tests/table tests/concurrency tests/iceberg \
		$(NO_RENAME_TESTS) $(PARALLEL) -p no:cacheprovider

# The stress tests at the sizes the concurrency issue sets (CI runs this after `make test`):
# 4 writers x 50 commits + 50 DDL, 100 SIGKILLs, 10,000 fuzzed statements and change sequences,
# 10 model histories, 30 random type chains and 4 schema-on-write histories per merge path; on two processes, each running one group of
# tests/stress/groups.py.
stress-full:
	@bash scripts/setup.sh --test
	EVONB_STRESS_COMMITS=50 EVONB_STRESS_DDL_COMMITS=50 EVONB_STRESS_KILLS=100 \
	EVONB_FUZZ_STATEMENTS=10000 EVONB_FUZZ_OPERATIONS=10000 EVONB_MODEL_HISTORIES=10 EVONB_TYPE_CHAINS=30 \
	EVONB_WRITE_MODEL_HISTORIES=4 \
	$(PYTHON) -m pytest -m "stress or model" tests/stress tests/model -n $(WORKERS) --dist loadgroup \
		-p no:cacheprovider --durations=10

# Binder's environment built as repo2docker builds it (a fresh virtual environment from binder/,
# postBuild run in a copy of the repository), then every tutorial run on its kernel (CI runs it).
test-binder:
	@bash scripts/setup.sh --test
	EVONB_BINDER_BUILD=1 $(PYTHON) -m pytest tests/notebooks/test_binder_build.py -p no:cacheprovider

# The benchmark harness run at its tiny size, every group (CI runs it; `make test` leaves it out).
test-bench:
	@bash scripts/setup.sh --test
	EVONB_BENCH_TESTS=1 $(PYTHON) -m pytest tests/bench $(PARALLEL) -p no:cacheprovider --durations=5

# The reference-model test at the size of a release check (not in CI): 1,000 random histories.
# EVONB_MODEL_SEED=<seed> replays a run; the seed is printed at its start.
model-full:
	@bash scripts/setup.sh --test
	EVONB_MODEL_HISTORIES=$${EVONB_MODEL_HISTORIES:-1000} \
	$(PYTHON) -m pytest -s tests/model/test_model_histories.py -p no:cacheprovider

lab:
	@bash scripts/setup.sh --test
	$(PYTHON) -m jupyter lab notebooks/

bench:
	@bash scripts/setup.sh --test
	$(PYTHON) -m pip install --quiet -e ".[test,bench]"
	$(PYTHON) -m bench $(ARGS)

lint:
	$(PYTHON) -m ruff check evonb tests bench examples
