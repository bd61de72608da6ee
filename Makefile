# The two commands of the README: `make quickstart` (the main job) and `make test`.
PYTHON ?= python3

.PHONY: quickstart test lab bench lint setup

quickstart:
	@bash scripts/setup.sh
	$(PYTHON) examples/quickstart.py

test:
	@bash scripts/setup.sh --test
	$(PYTHON) -m pytest

lab:
	@bash scripts/setup.sh --test
	$(PYTHON) -m jupyter lab notebooks/

bench:
	@bash scripts/setup.sh --test
	$(PYTHON) -m pip install --quiet -e ".[test,bench]"
	$(PYTHON) -m bench $(ARGS)

lint:
	$(PYTHON) -m ruff check evonb tests bench examples
