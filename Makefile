# `make demo`: SemiFL and Partially Supervised on Fashion-MNIST (small profile, seed 0, CPU), trained into results-demo/
# (a second `make demo` reuses them: delete that folder to train again), printed beside the committed seeds 0-2.
# `make install` (demo, test and the targets below run it first): .venv/ with the package and its dev extra; then
# checks that torch and torchvision load together (semifl_core/torch_check.py): where they do not, it reinstalls
# torchvision from torch's own build family, or says in one line which two versions disagree and the command that fixes
# it (only downloading a dataset needs torchvision, so the install goes on). On a
# machine without an NVIDIA GPU (no nvidia-smi) torch's CPU wheels go in first, in pyproject.toml's torch range
# (TORCH_PINS), a few hundred MB instead of the CUDA build's GBs; where download.pytorch.org cannot be reached (or
# has no wheel for this Python) it says so in one line, and pip install -e '.[dev]' takes torch from the default index.
# It also keeps the kernel's Python version out of the notebooks (a pre-save hook in the venv's JupyterLab, a git clean
# filter in this clone): a notebook saved unchanged in JupyterLab, with a kernel of any Python 3, changes nothing git
# sees (docs/usage.md, "Saving a notebook").
# `make test`: the test suite (with the notebooks executed headlessly in the smoke profile, and nbval on the committed
# notebooks against the committed results: SEMIFL_NO_TRAIN=1, nothing trains; a run missing from results/ is left out
# and named in the notebook, and its cells say "not run"), then the regression oracle again under the scalar CPU
# kernels (its results must not depend on the instruction set). The notebook tests run two notebooks at a time
# (SEMIFL_TEST_JOBS=1: one).
# `make test-distributed`: installs the [distributed] extra (Flower, Ray) and runs the tests of its adapters.
# `make bench-gpu`: the GPU measurement, one markdown table (scripts/bench.py: under 8 minutes on an H100 or
# H200; its docstring says how to carry Fashion-MNIST to a lent GPU machine). It needs no venv (a device machine has
# none): the venv's python if there is one, else python3. `make bench-gpu ARGS=--smoke`: tiny sizes on a CPU, seconds.
# `make render`: re-execute every notebook in place from the committed results only (nothing trains; seconds each),
# then regenerate README.md's headline table from them (python -m semifl_core.report.readme).
# `make check-notebooks`: each committed notebook saved as JupyterLab saves it (else it fails), converted to HTML and
# screenshotted by headless Chromium (1400 px wide) into build/notebook-screenshots/; fails on an error output, a
# stderr band, an NBVAL marker, a NaN in a table, a table wider than JupyterLab's ~890 px output area, figure text
# under 13 px where it is shown (notebook or README), a pointer to a README or docs section that does not exist, an
# internal word, a code line wider than the editor or a printed line JupyterLab would wrap mid-word (over 113
# characters), or a unit after n=k.
# `make notebooks`: re-execute every notebook in place, training the runs it needs that are missing (hours on a
# CPU; resumable: stop it and start again, finished runs are kept). Commit results/ text and the notebooks after.
VENV ?= .venv
NOTEBOOKS := table4 table1 learning_curves diagnosis scale table2 figure6 table3 table5 figure2 feddure_table1 few_labels horizon theorem1 cbafed_table1 label_skew
PY := $(VENV)/bin/python

TORCH_PINS := "torch>=2.9,<2.15" "torchvision>=0.24,<0.30"
TORCH_CPU := https://download.pytorch.org/whl/cpu

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	command -v nvidia-smi >/dev/null 2>&1 \
	  || $(PY) -m pip install -q --retries 1 $(TORCH_PINS) --index-url $(TORCH_CPU) >/dev/null 2>&1 \
	  || echo "note: no CPU wheels from $(TORCH_CPU): torch comes from pip's default index"
	$(PY) -m pip install -q -e '.[dev]'
	@$(PY) -m semifl_core.torch_check --repair \
	  || echo "make install goes on: training and the tests read dataset files and never need torchvision"
	touch $@

.PHONY: demo test test-distributed install render notebooks check-notebooks bench-gpu notebook-save
install: $(VENV)/.installed notebook-save

# the pre-save hook in the venv's Jupyter config and the git filter .gitattributes names (notebook_files.install)
notebook-save: $(VENV)/.installed
	@$(PY) -m semifl_core.report.notebook_files --install

demo: $(VENV)/.installed notebook-save
	$(VENV)/bin/semifl demo --profile small --dataset fashionmnist --results-dir results-demo

test: $(VENV)/.installed notebook-save
	$(PY) -m pytest -q -m 'not distributed' tests
	ATEN_CPU_CAPABILITY=default $(PY) -m pytest -q tests/test_regression.py -k equal

# the Flower and Ray adapters' tests: installs the [distributed] extra (flwr, ray) into the venv first
test-distributed: $(VENV)/.installed
	$(PY) -m pip install -q -e '.[dev,distributed]'
	$(PY) -m pytest -q -m distributed tests

render: $(VENV)/.installed notebook-save
	for nb in $(NOTEBOOKS); do SEMIFL_NO_TRAIN=1 $(VENV)/bin/papermill -k python3 --log-level WARNING notebooks/$$nb.ipynb notebooks/$$nb.ipynb || exit 1; done
	$(PY) -m semifl_core.report.notebook_files $(NOTEBOOKS:%=notebooks/%.ipynb)
	$(PY) -m semifl_core.report.readme

notebooks: $(VENV)/.installed notebook-save
	for nb in $(NOTEBOOKS); do $(VENV)/bin/papermill -k python3 --log-level WARNING notebooks/$$nb.ipynb notebooks/$$nb.ipynb || exit 1; done
	$(PY) -m semifl_core.report.notebook_files $(NOTEBOOKS:%=notebooks/%.ipynb)

check-notebooks: $(VENV)/.installed notebook-save
	$(PY) -m semifl_core.report.notebook_files --check $(NOTEBOOKS:%=notebooks/%.ipynb)
	$(PY) tests/browser_check.py

bench-gpu:
	PYTHONPATH=$(CURDIR) $(if $(wildcard $(PY)),$(PY),python3) scripts/bench.py $(ARGS)
