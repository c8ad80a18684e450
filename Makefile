# Two entry points for a fresh machine: `make demo` and `make test`. Both create .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# WordNet 3.0 for NLTK: Debian's wordnet-base (+ sense index), copied where NLTK looks
# (sys.prefix/nltk_data), plus the `lexnames` file Debian lacks (from its lexnames(5WN) page).
WORDNET := $(VENV)/nltk_data/corpora/wordnet
WORDNET_STAMP := $(WORDNET)/.installed-stamp
WORDNET_DEBS := $(VENV)/wordnet-debs
# The venv's bin on PATH: Beam's external worker pool starts a bare `python`.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: venv demo test test-fast lint bench fidelity browser-deps screenshots clean

venv: $(STAMP) $(WORDNET_STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev,neural,annotators]'
	touch $(STAMP)

$(WORDNET_STAMP): $(STAMP) data_specs/wordnet_lexnames
	mkdir -p $(WORDNET)
	if [ -f /usr/share/wordnet/data.noun ] && [ -f /usr/share/wordnet/index.sense ]; then \
	  cp /usr/share/wordnet/* $(WORDNET)/; \
	else \
	  rm -rf $(WORDNET_DEBS) && mkdir -p $(WORDNET_DEBS) && cd $(WORDNET_DEBS) && \
	  { apt-get download wordnet-base wordnet-sense-index 2>/dev/null || \
	    { apt-get update -qq && apt-get download wordnet-base wordnet-sense-index; }; } && \
	  for deb in *.deb; do dpkg -x $$deb root; done && cd $(CURDIR) && \
	  cp $(WORDNET_DEBS)/root/usr/share/wordnet/* $(WORDNET)/; \
	fi
	cp data_specs/wordnet_lexnames $(WORDNET)/lexnames
	# The compact WordNet index of `protoqa score` (cached; built here once, not on a first score).
	$(PY) -c 'from transforms.protoqa.wordnet import load_index; load_index()'
	touch $@

demo: $(STAMP) $(WORDNET_STAMP)
	$(VENV)/bin/csdata demo --output out/demo

test: lint browser-deps
	$(PY) -m pytest

# Headless Chromium and its WebDriver for the browser tests (Debian packages; as root or via sudo).
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser-deps:
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
	  $(SUDO) apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1 || \
	  { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium chromium-driver; }; \
	fi

# The README's screenshots: the browser tests, saving their screenshots into docs/screenshots/.
screenshots: $(STAMP) $(WORDNET_STAMP) browser-deps
	CSDATA_SCREENSHOTS=$(CURDIR)/docs/screenshots $(PY) -m pytest tests/browser -q

# Unit tests only (no end-to-end pipelines, no real models): under two minutes.
test-fast: $(STAMP) $(WORDNET_STAMP) browser-deps
	$(PY) -m pytest -m "not slow"

lint: $(STAMP) $(WORDNET_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

bench: $(STAMP) $(WORDNET_STAMP)
	$(PY) tests/bench_record.py
	$(PY) tests/bench_record_variants.py
	$(PY) tests/bench_cosmos.py
	$(PY) tests/bench_protoqa.py

# Needs the real third-party samples beside the checkout (../shared/samples/record).
fidelity: $(STAMP) $(WORDNET_STAMP)
	$(PY) tests/fidelity_record.py ../shared/samples/record/*.json*
	$(PY) tests/fidelity_protoqa.py ../shared/samples/protoqa/dev.crowdsourced.jsonl

clean:
	rm -rf $(VENV) out
