# kinefit developer entry points. Everything runs inside .venv, created on demand.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test check notebook lint format bench clean
# pytest-xdist workers of `make test` and `make check` (SLURM, Prefect-harness and serve tests
# each keep to one worker).
WORKERS ?= 2
XDIST := -n $(WORKERS) --dist loadgroup

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,dlc,c3d,nwb,sleap,viz,mjcf,urdf,osim,bench,movement]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/kinefit demo

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q $(XDIST)

# The edit loop: lint plus the unit tests that are not marked slow (54 s on 2 idle cores).
check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q -x $(XDIST) -m "not slow" tests/unit

# The inspection notebook in JupyterLab, on the demo's fits (or FITS=/path/to/fits).
# Headless: no browser is opened; open the http://127.0.0.1:8888/lab?token=... address that
# JupyterLab prints (over ssh: ssh -L 8888:127.0.0.1:8888 HOST). As root (containers)
# JupyterLab refuses to start without --allow-root, so it is passed for root only.
FITS ?= kinefit-demo/fits
NOTEBOOK_PORT ?= 8888
NOTEBOOK_FLAGS := --no-browser --ip=127.0.0.1 --port=$(NOTEBOOK_PORT) \
	$(if $(filter 0,$(shell id -u)),--allow-root)
notebook: $(STAMP)
	$(BIN)/python -m pip install --quiet jupyterlab
	@echo "JupyterLab on the fits in $(abspath $(FITS)): open the http://127.0.0.1:$(NOTEBOOK_PORT)/lab?token=... address printed below"
	KINEFIT_FITS_ROOT="$(abspath $(FITS))" $(BIN)/jupyter lab $(NOTEBOOK_FLAGS) notebooks/inspect_fit.ipynb

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/python benchmarks/solver_throughput.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
