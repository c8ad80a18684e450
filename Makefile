# Two entry points for a fresh machine: `make demo` and `make test`. Both create .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# The venv's bin on PATH: Beam's external worker pool starts a bare `python`.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: venv demo test bench fidelity clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev,neural]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/csdata demo --output out/demo

test: $(STAMP)
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) tests/bench_record.py

# Needs the real third-party samples beside the checkout (../shared/samples/record).
fidelity: $(STAMP)
	$(PY) tests/fidelity_record.py ../shared/samples/record/*.json*

clean:
	rm -rf $(VENV) out
