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
FLINK := services/flink/flink.sh
S3 := services/s3/s3.sh
# The venv's bin on PATH: Beam's external worker pool starts a bare `python`.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: venv demo test test-fast lint docs docs-check bench bench-scale bench-resume fidelity fuzz browser-deps screenshots clean \
	flink-fetch flink-up flink-down services-test s3-fetch s3-up s3-down test-beam

venv: $(STAMP) $(WORDNET_STAMP)

# The install goes through uv (from PyPI: it installs the same requirements as pip, in parallel,
# several times faster) where uv installs and pip is configured with nothing but settings uv is
# given here (find-links folders, a CA bundle) or that change no package (timeouts, output):
# a pip set up for another index, a proxy, constraints or other choices installs with pip itself,
# as does a machine with no uv wheel, and so does any install uv fails. Like pip, uv compiles the
# bytecode at install: where PYTHONDONTWRITEBYTECODE is set, nothing else would, and every
# interpreter would compile Beam and torch again. CHOOSE_INSTALLER prints the installer and its
# options (its name must not start with PIP_, or pip would read it as one of its settings).
EXTRAS := .[dev,neural,annotators,docs]
PIP_INSTALL := $(PY) -m pip install --quiet --disable-pip-version-check -e '$(EXTRAS)'
define CHOOSE_INSTALLER
import ast, os, re, shlex, subprocess, sys
listed = subprocess.run([sys.argv[1], "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
try:
    settings = [(where, key, ast.literal_eval(value))
                for where, key, value in re.findall(r"^([^.\n]*)\.([a-z-]+)=(.*)$$", listed, re.M)]
except (ValueError, SyntaxError):
    settings = [("", "unreadable", "")]
harmless = {"find-links", "cert", "timeout", "default-timeout", "retries", "disable-pip-version-check",
            "quiet", "verbose", "progress-bar", "no-color", "no-input", "cache-dir", "no-cache-dir",
            "root-user-action"}
if any(key not in harmless for _, key, _ in settings):
    print("pip")
else:
    links = [word for _, key, value in settings if key == "find-links" for word in value.split()
             if "://" in word or os.path.isdir(word)]
    certs = sorted((where != ":env:", value) for where, key, value in settings if key == "cert")
    cert = ["SSL_CERT_FILE=" + certs[0][1]] if certs else []
    print(shlex.join(["uv", *cert, *("--find-links=" + link for link in links)]))
endef
export CHOOSE_INSTALLER

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	@eval "set -- $$($(PY) -c "$$CHOOSE_INSTALLER" $(PY))"; \
	if [ "$$1" = uv ] && $(PY) -m pip install --quiet --disable-pip-version-check --only-binary=:all: uv; then \
	  shift; case "$${1-}" in SSL_CERT_FILE=*) export "$$1"; shift;; esac; \
	  set -x; $(VENV)/bin/uv pip install --quiet --compile-bytecode --python $(PY) "$$@" -e '$(EXTRAS)' \
	  || $(PIP_INSTALL); \
	else \
	  set -x; $(PIP_INSTALL); \
	fi
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
	$(PY) -c 'from transforms.protoqa.wordnet_index import load_index; load_index()'
	touch $@

demo: $(STAMP) $(WORDNET_STAMP)
	$(VENV)/bin/csdata demo --output out/demo

# The unit suite runs on every core (up to 4; pytest-xdist, one test file per worker, so a
# module's fixtures are built once). A test running past TEST_TIMEOUT seconds (SERVICES_TIMEOUT
# for the Flink and S3 tests, whose longest takes 4 to 6 min) fails with its stack.
XDIST := -n auto --maxprocesses=4 --dist loadfile
# Each run of the suite ends with its ten slowest tests (what to look at when the suite grows).
SLOWEST := --durations=10
# The unit suite runs a test file per core: a numeric library's own thread pool in each worker
# (torch's OpenMP, OpenBLAS: one thread per core by default) oversubscribes the cores, and its
# idle threads spin. One thread each (unless OMP_NUM_THREADS is set) gave the same results for
# 14 % less CPU (40 % on the cross-encoder's tests). The Flink and S3 tests, benchmarks and runs
# keep the libraries' defaults.
ONE_THREAD := OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1}
TEST_TIMEOUT ?= 900
SERVICES_TIMEOUT ?= 600

# Every check: lint and types beside the documentation site's build (each uses one core), the
# unit suite, then the tests on the real Flink cluster and S3 server (which `services-test` starts
# and stops). The unit suite does not run beside the Flink faults: tried, the two together took
# longer than one after the other (both CPU-bound here, and the cluster's JVMs on top).
test: $(STAMP) $(WORDNET_STAMP) browser-deps
	$(MAKE) --no-print-directory --output-sync=target -j2 lint docs-check
	$(ONE_THREAD) $(PY) -m pytest -m "not flink and not s3" $(XDIST) $(SLOWEST) --timeout=$(TEST_TIMEOUT)
	$(MAKE) services-test

# The readers of files other people made, fuzzed (tests/fuzz): `make test` runs 100 fixed cases
# per reader; this runs FUZZ_EXAMPLES random ones each and prints how many ran.
FUZZ_EXAMPLES ?= 2000
fuzz: $(STAMP)
	CSDATA_FUZZ_PROFILE=fuzz CSDATA_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest tests/fuzz \
	  --hypothesis-show-statistics

# A real Flink 1.19 session cluster on loopback (services/flink): JobManager + 2 TaskManagers x
# 2 slots, REST and web UI on localhost:8081. Flink and Beam's job server are fetched once into
# ~/.cache/csdata (PyPI, Maven) and found offline after that.
flink-fetch: $(STAMP)
	PYTHON=$(CURDIR)/$(PY) $(FLINK) fetch

flink-up: flink-fetch
	PYTHON=$(CURDIR)/$(PY) $(FLINK) up

flink-down:
	PYTHON=$(CURDIR)/$(PY) $(FLINK) down

# Every Beam pipeline on the cluster and in process, compared row by row, inputs and outputs on
# S3, and the faults each must survive (tests/flink, tests/s3). First the S3 test files beside the
# cluster's pipeline tests (three xdist workers, a file per worker: the pipeline tests, one file,
# run one after another, as each counts its job's records per TaskManager, while the S3 files share
# the other two; the machine's CPU is half idle while a Flink job runs); then, alone, what takes a
# server away: the S3 server's restart and the faults (TaskManagers killed, the S3 server stopped).
# The cluster and the server are stopped whether the checks pass or not.
S3_RESTART := tests/s3/test_s3_service.py::test_data_survives_a_restart
services-test: $(STAMP) $(WORDNET_STAMP) flink-fetch s3-fetch
	status=0; PYTHON=$(CURDIR)/$(PY) $(S3) up --fresh && PYTHON=$(CURDIR)/$(PY) $(FLINK) up \
	  && $(PY) -m pytest -m "flink or s3" -n 3 --dist loadfile $(SLOWEST) --timeout=$(SERVICES_TIMEOUT) \
	     tests/s3 tests/flink/test_flink_pipelines.py --deselect $(S3_RESTART) \
	  && $(PY) -m pytest -m "flink or s3" $(SLOWEST) --timeout=$(SERVICES_TIMEOUT) $(S3_RESTART) \
	     tests/flink/test_flink_faults.py \
	  || status=$$?; \
	PYTHON=$(CURDIR)/$(PY) $(FLINK) down; PYTHON=$(CURDIR)/$(PY) $(S3) down; exit $$status

# A real S3-compatible server (SeaweedFS, services/s3) on loopback: S3 API on 127.0.0.1:9000 with
# the test-only key csdata / secret csdata-secret, buckets `csdata` and `csdata-full` (refuses every
# write, as a full disk would). SeaweedFS is built once from the Go module proxy into
# ~/.cache/csdata; its data is kept between s3-down and s3-up (`services/s3/s3.sh up --fresh` wipes it).
s3-fetch: $(STAMP)
	PYTHON=$(CURDIR)/$(PY) $(S3) fetch

s3-up: s3-fetch
	PYTHON=$(CURDIR)/$(PY) $(S3) up

s3-down:
	PYTHON=$(CURDIR)/$(PY) $(S3) down

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

# The suite without the Flink and S3 tests on another Beam, in a venv of its own (how the lowest
# supported Beam is checked): make test-beam VERSION=2.76.0. WordNet is .venv's (NLTK_DATA).
BEAM_VENV = .venv-beam-$(VERSION)
test-beam: $(STAMP) $(WORDNET_STAMP) browser-deps
	@[ -n "$(VERSION)" ] || { echo "make test-beam VERSION=2.76.0: name a Beam version" >&2; exit 2; }
	[ -f $(BEAM_VENV)/.installed-stamp ] || { $(PYTHON) -m venv $(BEAM_VENV) && \
	  $(BEAM_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
	    -e '.[dev,neural,annotators,docs]' 'apache-beam[aws]==$(VERSION)' && touch $(BEAM_VENV)/.installed-stamp; }
	$(BEAM_VENV)/bin/python -c 'import apache_beam; assert apache_beam.__version__ == "$(VERSION)", apache_beam.__version__'
	$(ONE_THREAD) PATH=$(CURDIR)/$(BEAM_VENV)/bin:$$PATH NLTK_DATA=$(CURDIR)/$(VENV)/nltk_data $(BEAM_VENV)/bin/python -m pytest -m "not flink and not s3" $(XDIST) --timeout=$(TEST_TIMEOUT)

# Unit tests only (no end-to-end pipelines, no real models).
test-fast: $(STAMP) $(WORDNET_STAMP) browser-deps
	$(ONE_THREAD) $(PY) -m pytest -m "not slow and not flink and not s3" $(XDIST) --timeout=$(TEST_TIMEOUT)

# The documentation site (docs/, mkdocs.yml) into site/: the reference pages are generated from
# the code first (docs/gen_reference.py). `docs-check` (part of `make test`) regenerates nothing:
# it fails on a stale reference page, then builds strictly (a broken link or missing page fails).
export NO_MKDOCS_2_WARNING := 1
docs: $(STAMP)
	$(PY) docs/gen_reference.py
	$(VENV)/bin/mkdocs build --strict --quiet
	@echo "site/index.html (serve it with: $(PY) -m http.server -d site)"

docs-check: $(STAMP)
	$(PY) docs/gen_reference.py --check
	$(VENV)/bin/mkdocs build --strict --quiet

lint: $(STAMP) $(WORDNET_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

bench: $(STAMP) $(WORDNET_STAMP) flink-fetch
	$(PY) tests/bench_record.py
	$(PY) tests/bench_record_variants.py
	$(PY) tests/bench_cosmos.py
	$(PY) tests/bench_protoqa.py
	$(PY) tests/bench_flink.py
	$(MAKE) bench-resume

# `record generate` (10,000 articles) and `cosmos paragraphs` (15,000 blog files) SIGKILLed at 70 %
# of a clean run's wall time and rerun, in process and on the local Flink cluster (started and
# stopped by the script unless one runs already): rerun / clean wall (goal <= 0.45x) and identical
# rows; out/bench-resume.json (docs/benchmarks.md). About 40 minutes on 2 cores;
# `make bench-resume RUNNERS=local` takes about 15.
bench-resume: $(STAMP) $(WORDNET_STAMP) flink-fetch
	$(PY) tests/bench_resume.py --runners $(RUNNERS)

# `record generate`, `record filter` and `cosmos paragraphs` on 1x, 10x and 30x a corpus made from
# the repo's samples (tests/scale_corpus.py), in process and on the local Flink cluster (which the
# script starts and stops, failed or not, unless one runs already): wall, CPU, peak RSS, rows;
# out/bench-scale.json (docs/benchmarks.md). `make bench-scale SCALES=1 RUNNERS=local` is quick.
# With a real corpus folder, BLOGS=DIR (Blog Authorship Corpus .xml: `cosmos paragraphs`) and/or
# STORIES=DIR (CNN/DM .story: `record generate`), a tenth of it and the whole instead (SCALES
# unused): `make bench-scale BLOGS=~/.cache/csdata/blogs RUNNERS=local`.
SCALES ?= 1,10,30
RUNNERS ?= local,flink
BLOGS ?=
STORIES ?=
bench-scale: $(STAMP) flink-fetch
	$(PY) tests/bench_scale.py --runners $(RUNNERS) $(if $(BLOGS)$(STORIES),$(if $(BLOGS),--blogs $(BLOGS)) \
	  $(if $(STORIES),--stories $(STORIES)),--scales $(SCALES))

# Needs the real third-party samples beside the checkout (../shared/samples). The last script
# compares the machine filter's readers per fold on the real CNN/DM articles (about 20 minutes on
# 2 cores; FILTER_READERS=lexical for a quick look).
FILTER_READERS ?= lexical,cross-encoder
fidelity: $(STAMP) $(WORDNET_STAMP)
	$(PY) tests/fidelity_record.py ../shared/samples/record/*.json*
	$(PY) tests/fidelity_protoqa.py ../shared/samples/protoqa/dev.crowdsourced.jsonl
	$(PY) tests/fidelity_filter.py --readers $(FILTER_READERS) ../shared/samples/cnndm/stories \
	  ../shared/samples/cnndm/hf_train_sample.jsonl

clean:
	rm -rf $(VENV) .venv-beam-* out site
