# The README's two commands: `make serve` and `make test`. Both set everything up
# from a fresh clone: virtual environments, npm packages, a Chromium for the tests.

SHELL := /bin/bash
.DEFAULT_GOAL := help
export NO_MKDOCS_2_WARNING := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1

VENV := .venv
PY := $(VENV)/bin/python
LOCK_VENV := .venv-lock
WHEELS_FOR_PYODIDE := .cache/pyodide-wheels
HOST ?= 127.0.0.1
PORT ?= 8000

# pyodide-build's `lockfile add-wheels` needs Python >= 3.12: the first candidate that
# really runs and is new enough (pyenv shims may exist for versions that are not active).
PY312 ?= $(shell for p in python3 python3.14 python3.13 python3.12 $$(ls -d $$(pyenv root 2>/dev/null)/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -r); do \
	$$p -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1 && { command -v $$p; exit; }; done)

.PHONY: help serve test test-unit test-build test-wheel test-pyodide test-pyodide-cut test-browser site site-then-suites wheel bench setup chromium chromium-full clean

help:
	@echo "make serve   build the site and serve it at http://$(HOST):$(PORT) (rebuilds on change)"
	@echo "make test    every test: pysim in CPython, pysim in Pyodide (Node), the site in Chromium"
	@echo "make site    build site/ (hosted) and site-offline/ (the download, zipped into site/)"
	@echo "make wheel   build the pysim wheel into dist/"
	@echo "make bench   run the benchmarks and print their tables"

# ------------------------------------------------------------------ set-up

# (The pip each venv comes with installs these; upgrading it first only cost time.)
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

$(LOCK_VENV)/.installed:
	@test -n "$(PY312)" || { echo "Python >= 3.12 is needed for pyodide-build (set PY312=/path/to/python3.12)"; exit 1; }
	$(PY312) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/python -m pip install -q 'pyodide-build>=0.30' 'pyodide-lock[wheel]'
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

$(WHEELS_FOR_PYODIDE)/.installed: tests/pyodide/requirements.txt $(VENV)/.installed
	rm -rf $(WHEELS_FOR_PYODIDE)
	$(PY) -m pip download -q --no-deps -r tests/pyodide/requirements.txt -d $(WHEELS_FOR_PYODIDE) \
		--only-binary=:all: --python-version 3.14 --implementation py --platform any --abi none
	touch $@

# A browser for the tests: $CHROMIUM, or Chromium's headless shell (tests/browser/conftest.py
# says why), or a full Chromium already on the machine. As root with none of them,
# Debian's `chromium-headless-shell` (a smaller download than `chromium`).
chromium:
	@if [ -n "$$CHROMIUM" ] || [ -x /usr/lib/chromium/chromium-headless-shell ] \
		|| command -v chromium-headless-shell >/dev/null 2>&1 || command -v chrome-headless-shell >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing Debian's chromium-headless-shell"; apt-get update -qq \
		&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell >/dev/null; \
	elif [ -x /usr/lib/chromium/chromium ] || [ -x /usr/bin/chromium ] || command -v google-chrome >/dev/null 2>&1 \
		|| command -v chromium-browser >/dev/null 2>&1 || ls ~/.cache/ms-playwright/chromium* >/dev/null 2>&1; then :; \
	else echo "No Chromium found. Install one (apt-get install chromium-headless-shell) or run: $(VENV)/bin/playwright install chromium-headless-shell"; exit 1; fi

# The benchmarks time pages in the browser a reader runs, the full Chromium: one on the
# machine, else Debian's `chromium` as root, else they fall back to the headless shell.
chromium-full:
	@if [ -n "$$CHROMIUM" ] || [ -x /usr/lib/chromium/chromium ] || [ -x /usr/bin/chromium ] \
		|| command -v google-chrome >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing Debian's chromium"; apt-get update -qq \
		&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "No full Chromium found: the benchmarks run in the headless shell"; fi

setup: $(VENV)/.installed $(LOCK_VENV)/.installed node_modules/.installed

# ------------------------------------------------------------------ build

# Two builds of the same sources (README, "Deploying"): the download first (site-offline/,
# Material's offline plugin, and its zip), then the hosted site (site/, instant
# navigation), which copies that zip in for its footer's download link. Both in one
# process (sitebuild/__main__.py), so the second reuses the figures the first computed.
site: setup
	$(PY) -m sitebuild

wheel: $(VENV)/.installed
	$(PY) -m build --wheel --no-isolation --outdir dist .

# (MkDocs watches docs/ and the theme's overrides/ itself.)
serve: setup
	$(VENV)/bin/mkdocs build --strict -f mkdocs-offline.yml
	$(VENV)/bin/mkdocs serve --strict -a $(HOST):$(PORT) --watch pysim --watch widgets --watch sitebuild

# ------------------------------------------------------------------ tests

# The set-up's downloads (two virtual environments, npm's packages) run side by side.
# Then the suites that each keep one core busy run together, while the site builds:
# pysim's CPython suite, and its Pyodide suite, on a wheel built the way the site builds
# its own (test-wheel), so neither waits for the site. Once the site is built, the browser
# suite (two workers, Chromium: nearly both cores on its own), beside the short checks
# that need the site: the build steps' tests, which read the figures the build computed
# (sitebuild/figure_cache.py), and the page's cut standard library. Every step but the
# downloads is CPU-bound, and the browser suite slows down more than any other when it
# shares the cores, so it gets them as much to itself as the order allows
# (bench/bench_test_cpu.py prints each suite's CPU alone). Each step's output is printed
# whole when it ends.
test:
	$(MAKE) --no-print-directory -j3 --output-sync=target test-unit test-pyodide site-then-suites

site-then-suites: setup $(WHEELS_FOR_PYODIDE)/.installed chromium test-wheel
	$(MAKE) --no-print-directory site
	$(MAKE) --no-print-directory --output-sync=target test-browser test-pyodide-cut test-build

# pysim's tests (CPython).
test-unit: $(VENV)/.installed
	$(VENV)/bin/pytest -p no:cacheprovider tests/unit

# The build steps' tests (sitebuild/: plain CPython, no MkDocs, no browser); after a
# site build they also check its pages, and read its figures.
test-build: $(VENV)/.installed
	$(VENV)/bin/pytest -p no:cacheprovider tests/build

# The pysim wheel as the site's build makes it (sitebuild/wheel.py: the same code gives
# the same bytes, and the name carries their sha256), for the Pyodide suite.
TEST_WHEEL := .cache/test-wheel
test-wheel: $(VENV)/.installed
	rm -rf $(TEST_WHEEL) && mkdir -p $(TEST_WHEEL)
	$(PY) -c 'import sys, pathlib, sitebuild.wheel as w; print(w.build_wheel(pathlib.Path(sys.argv[1]).resolve()).name)' $(TEST_WHEEL)

# The same unit tests inside Pyodide (with Pyodide's whole standard library: pytest
# needs it), against that wheel.
test-pyodide: $(WHEELS_FOR_PYODIDE)/.installed node_modules/.installed test-wheel
	node tests/pyodide/run_pytest.mjs $(WHEELS_FOR_PYODIDE) $$(ls $(TEST_WHEEL)/pysim-*.whl)

# After a site build: the wheel the site ships is, byte for byte, the one the Pyodide
# suite tested; and the page's cut standard library, the zip the site ships (bytecode),
# runs pysim, the exercise and the reader's modules.
test-pyodide-cut: node_modules/.installed
	@cmp site/assets/pyodide/*/pysim-*.whl $(TEST_WHEEL)/pysim-*.whl \
		|| { echo "the site's wheel is not the one the Pyodide suite tested (make test-wheel, then make site)"; exit 1; }
	for zip in site/assets/pyodide/*/python_stdlib.*.zip; do \
		node tests/pyodide/cut_stdlib.mjs $$zip $$(ls site/assets/pyodide/*/pysim-*.whl) || exit 1; done

# Two workers, each with its own Chromium and server; a test goes to whichever is free
# (so no test may count on another having run before it on the same page).
# BROWSER_WORKERS=0 runs them in this one process (easier to read when one fails).
# A browser test that fails is run once more, and the summary counts it ("1 rerun", and
# `-r R` names it): a real Chromium on a loaded machine (this suite runs beside the
# Pyodide one) now and then misses a frame that a test's wait did not foresee. A test
# that fails twice fails the suite. Every rerun is a wait to fix: CONTRIBUTING.md.
# BROWSER_DURATIONS: how many of the slowest tests the summary lists (0: every one, as
# bench/bench_browser_starts.py asks).
BROWSER_WORKERS ?= 2
BROWSER_DURATIONS ?= 25
test-browser: $(VENV)/.installed
	$(VENV)/bin/pytest -p no:cacheprovider --durations=$(BROWSER_DURATIONS) -n $(BROWSER_WORKERS) --dist worksteal \
		--reruns 1 --reruns-delay 1 -r fER tests/browser

bench: site $(WHEELS_FOR_PYODIDE)/.installed chromium chromium-full
	@for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf site site-offline dist .cache .pytest_cache
