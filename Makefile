# Two commands on a fresh machine:  make app  (serve the dashboard)  and  make test  (whole suite).
# Both create .venv if needed and (re)install only when pyproject.toml changed, so a second run is quick.
# Commands of the project's own command line run with the venv's Python: .venv/bin/python -m attentive ...

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 5006
PYTEST_ARGS ?=

.PHONY: app lab scale test lint format bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.stamp-app: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.stamp-scale: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[scale]"
	touch $@ $(VENV)/.stamp-app

$(VENV)/.stamp-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test,scale,notebook]"
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@ $(VENV)/.stamp-app $(VENV)/.stamp-scale

## make scale: .venv with the scale extra (Dask, pyarrow), for .venv/bin/python -m attentive score
scale: $(VENV)/.stamp-scale

## make app: serve the dashboard on http://127.0.0.1:5006/app (offline default dataset)
# Uploads travel over the websocket, whose message limit must exceed the 50 MB upload limit
# (base64 adds a third): 80 MiB.
app: $(VENV)/.stamp-app
	$(BIN)/panel serve app.py --address $(HOST) --port $(PORT) --allow-websocket-origin=$(HOST):$(PORT) --allow-websocket-origin=localhost:$(PORT) --websocket-max-message-size 83886080

## make lab: JupyterLab on the notebooks (the dashboard inline, offline: notebooks/dashboard.ipynb)
lab: $(VENV)/.stamp-test
	$(BIN)/jupyter lab notebooks --ServerApp.ip=$(HOST)

## make test: install the test extra and run the whole suite (lint included). The browser tests
## (each serves the app and drives Chromium) run after the rest, one at a time: on two cores,
## running them beside other tests makes page loads time out.
test: $(VENV)/.stamp-test
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n 2 -m "not browser" --timeout=600 $(PYTEST_ARGS)
	$(BIN)/python -m pytest -m browser --timeout=600 $(PYTEST_ARGS) || test $$? -eq 5

lint: $(VENV)/.stamp-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(VENV)/.stamp-test
	$(BIN)/ruff format .

## make bench: the benchmark as a user's machine runs it (numpy's OpenBLAS on its own kernels),
## against scikit-learn-intelex on the same model (the bench extra)
bench: $(VENV)/.stamp-app
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(BIN)/python -m attentive bench

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
