# `make demo`: SemiFL and Partially Supervised on Fashion-MNIST (small profile, seed 0, CPU), trained into results-demo/
# (a second `make demo` reuses them: delete that folder to train again), printed beside the committed seeds 0-2.
# `make test`: the test suite (with the notebooks executed headlessly in the smoke profile), then nbval on the
# committed notebooks against the committed results (SEMIFL_NO_TRAIN=1: nothing trains; a run missing from results/
# is left out and named in the notebook, and its cells say "not run").
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
	$(VENV)/bin/semifl demo --profile small --dataset fashionmnist --results-dir results-demo

test: $(VENV)/.installed
	$(PY) -m pytest -q tests
	SEMIFL_NO_TRAIN=1 $(PY) -m pytest -q --nbval-lax -p no:cacheprovider notebooks/
