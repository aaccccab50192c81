# LRA harness. `make install` builds .venv; every other target uses it.
PYTHON        ?= python3
VENV          ?= .venv
PY            := $(VENV)/bin/python
PIP           := $(PY) -m pip
TORCH_VERSION ?= 2.13.0
# Where a CPU-only torch build comes from when none is on a local wheel path (pip's find-links).
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
# The extras `make install` installs and `make lock` locks.
EXTRAS        ?= dev,cluster,search,dashboards,fla
# The exact versions CI tested (written by `make lock`); `CONSTRAINTS=` installs the newest allowed instead.
CONSTRAINTS   ?= constraints.txt
LOCKED        := $(if $(CONSTRAINTS),-c $(CONSTRAINTS))
LRA_DATA      ?= data
ARGS          ?=
# Written after a complete install: `make install` (and every target that needs it) does nothing while
# it is newer than pyproject.toml and the constraints. Its name holds the settings it was made with, so
# another TORCH_VERSION, EXTRAS or CONSTRAINTS installs again.
comma         := ,
INSTALLED     := $(VENV)/.installed-torch$(TORCH_VERSION)-$(subst $(comma),-,$(EXTRAS))$(if $(CONSTRAINTS),,-unlocked)

.PHONY: install torch lock run test lint data bench report clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# A GPU machine gets the default (CUDA) build; a machine without one gets the CPU build,
# from a local wheel when pip's find-links has it, else from PyTorch's CPU index.
torch: $(PY)
	@if command -v nvidia-smi >/dev/null 2>&1; then \
		echo "GPU found: installing torch==$(TORCH_VERSION) (CUDA build)"; \
		$(PIP) install -q $(LOCKED) "torch==$(TORCH_VERSION)"; \
	else \
		echo "No GPU found: installing torch==$(TORCH_VERSION)+cpu"; \
		$(PIP) install -q $(LOCKED) "torch==$(TORCH_VERSION)+cpu" 2>/dev/null || \
		$(PIP) install -q $(LOCKED) "torch==$(TORCH_VERSION)+cpu" --extra-index-url $(TORCH_CPU_INDEX); \
	fi

install: $(INSTALLED)

$(INSTALLED): pyproject.toml $(CONSTRAINTS) | $(PY)
	@$(MAKE) --no-print-directory torch
	$(PIP) install -q $(LOCKED) -e ".[$(EXTRAS)]"
	rm -f $(VENV)/.installed-*
	touch $@

# Resolves the newest allowed versions in a fresh venv and pins them, for this Python only, in
# constraints.txt; torch and its CUDA libraries stay out (TORCH_VERSION pins them).
lock:
	rm -rf .lock-venv
	$(MAKE) --no-print-directory install VENV=.lock-venv CONSTRAINTS=
	version=$$(.lock-venv/bin/python -c 'import sys; print(*sys.version_info[:2], sep=".")'); \
	{ echo "# Written by \`make lock\`: the versions CI tests, on Python $$version. Torch: TORCH_VERSION."; \
	  .lock-venv/bin/python -m pip freeze --exclude-editable | grep -Ev '^(torch|triton|nvidia-.*|cuda-.*)==' \
	  | sed "s/\$$/ ; python_version == '$$version'/"; } > constraints.txt.new
	mv constraints.txt.new constraints.txt
	rm -rf .lock-venv

# The README's main job: a short CPU demo (conf/experiment/demo.yaml: ListOps from the built-in
# generator, short sequences).
run: install
	$(PY) -m lra experiment=demo $(ARGS)

test: install
	$(PY) -m pytest -q $(ARGS)

lint: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# The synthetic tasks need no download; the others need their sources (docs/data.md).
data: install
	$(PY) -m data_prep listops --root $(LRA_DATA)
	$(PY) -m data_prep pathfinder --generate --root $(LRA_DATA)

bench: install
	$(PY) -m lra.bench efficiency $(ARGS)
	$(PY) -m lra.bench fidelity $(ARGS)

report: install
	$(PY) -m lra.report $(ARGS)

clean:
	rm -rf $(VENV) .lock-venv outputs multirun wandb lightning_logs .pytest_cache .ruff_cache
