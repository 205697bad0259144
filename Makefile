# `make demo`: SemiFL and Partially Supervised on Fashion-MNIST (small profile, CPU, a few minutes).
# `make test`: the test suite (with the notebooks executed headlessly in the smoke profile).
VENV ?= .venv
PY := $(VENV)/bin/python

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

.PHONY: demo test install
install: $(VENV)/.installed

demo: $(VENV)/.installed
	$(VENV)/bin/semifl demo --profile small --dataset fashionmnist

test: $(VENV)/.installed
	$(PY) -m pytest -q tests
