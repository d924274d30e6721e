# eos-chaos: `make run` (smoke run on a local cluster) and `make test` (the test suite).
# Both do the set-up first; a second set-up with everything cached takes a second or two. `make run`
# installs and fetches only what a local cluster's run needs (no PySpark, no test tools, no Java bridge:
# each is fetched when a run first needs it); `make test` installs and fetches everything ahead.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The venv is reinstalled only when pyproject.toml changes: the base package for `make run`, with the
# spark and test extras for everything else.
HASH := $(shell sha1sum pyproject.toml 2>/dev/null | cut -c1-12)
BASE_STAMP := $(VENV)/.installed-base-$(HASH)
STAMP := $(VENV)/.installed-all-$(HASH)
KAFKA_VERSION ?=
KAFKA_FLAG := $(if $(KAFKA_VERSION),--kafka-version $(KAFKA_VERSION))
PYTEST_ARGS ?=
# Real-cluster tests run once per backend listed here (comma-separated).
EOS_CHAOS_BACKENDS ?= local,compose
export EOS_CHAOS_BACKENDS
WITH_COMPOSE := $(findstring compose,$(EOS_CHAOS_BACKENDS))

# An engine this target had to start is stopped again at its end, whatever the outcome.
define engine_stopped_at_exit
had_engine=0; docker info >/dev/null 2>&1 && had_engine=1; \
	 trap '[ $$had_engine = 1 ] || $(BIN)/eos-chaos engine down' EXIT
endef
# Run pytest $(1); with the compose backend selected, first make the Docker engine and the images
# ready (`eos-chaos images`).
define engine_then_pytest
$(engine_stopped_at_exit); \
	 if [ -n "$(WITH_COMPOSE)" ]; then $(BIN)/eos-chaos images $(KAFKA_FLAG) || exit $$?; fi; \
	 $(BIN)/pytest $(1)
endef
pytest_with_engine = @$(call engine_then_pytest,$(1))

.PHONY: setup setup-all run test test-unit lint chaos library clean-cache down images screenshots

# What a local cluster needs (Kafka, Toxiproxy, the wire proxy); the rest when a run first needs it.
setup: $(BASE_STAMP)
	@$(BIN)/eos-chaos setup $(KAFKA_FLAG)

# Everything ahead: also Spark's Kafka connector and the Java client bridges (CI, the test suite).
setup-all: $(STAMP)
	@$(BIN)/eos-chaos setup --all $(KAFKA_FLAG)

define python_version_ok
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 2)' || \
	  { echo "error: $(PYTHON) is $$($(PYTHON) --version 2>&1); eos-chaos needs Python 3.11+ (PYTHON=python3.11 make ...)" >&2; exit 2; }
endef

define need_python
	$(python_version_ok)
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
endef

# --no-compile: Python compiles what a run imports when it first does, not every file of every
# package (pandas, pyarrow, matplotlib) ahead: CPU a fresh `make run` shares with the Go build.
$(BASE_STAMP): pyproject.toml
	$(need_python)
	@echo "installing eos-chaos into $(VENV)/"
	@$(BIN)/python -m pip install -q --no-compile -e .
	@rm -f $(VENV)/.installed-base-* && touch $@

$(STAMP): pyproject.toml
	$(need_python)
	@echo "installing eos-chaos with its spark and test extras into $(VENV)/"
	@$(BIN)/python -m pip install -q -e '.[test,spark]'
	@rm -f $(VENV)/.installed-* && touch $@ $(BASE_STAMP)

# The set-up's fetch and Go build need the standard library only (python -m clusters.backends.artifacts): they
# run beside pip's install, and `eos-chaos setup` then finds everything in the cache (a fresh machine's
# `make run`: docs/BENCHMARKS.md).
run:
	$(python_version_ok)
	@PYTHONPATH=$(CURDIR) $(PYTHON) -m clusters.backends.artifacts $(KAFKA_FLAG) & ahead=$$!; \
	 $(MAKE) --no-print-directory $(BASE_STAMP); rc=$$?; wait $$ahead; exit $$rc
	@$(BIN)/eos-chaos setup $(KAFKA_FLAG)
	@$(BIN)/eos-chaos smoke $(KAFKA_FLAG)

# The lint and unit tests need no cluster; the real-cluster tests run one at a time (one cluster per
# backend for the session). tests/suite.sh runs the two parts (TEST_PARTS chooses):
#   parallel  side by side, on a machine of more than 2 cores;
#   beside    on 2 cores where a CPU cgroup can be made (tests/low_cpu.sh --check: root, cgroup v1 or
#             v2): side by side, the lint and unit tests with an eighth of a normal CPU share, so they
#             take what the real-cluster tests leave idle; a unit test that fails there runs again
#             alone at the end, listed (docs/howto/test-suite.md);
#   serial    one after the other (2 cores without a cgroup; at an equal share the two parts starved
#             each other, the real-cluster tests being CPU too: docs/BENCHMARKS.md).
# Side by side (parallel, beside), each backend's real-cluster tests are a pytest session of their
# own, the two at once. The unit part's output goes to results/unit-tests.log, the compose backend's
# to results/chaos-compose.log, each printed after the local backend's tests. Both parts run
# whatever the other gives; a part that PYTEST_ARGS leaves without a test (exit 5) does not fail
# the target. JUNIT=PREFIX writes PREFIX-unit.xml and PREFIX-chaos.xml. With the compose backend
# selected, the Docker engine and images are made ready first (`eos-chaos images`), and an engine
# this target had to start is stopped again, whatever the outcome.
# The unit tests run on UNIT_WORKERS pytest-xdist workers (0: one process): one per core on more
# than 2 cores, and 2 beside: one process alone leaves a core idle while it waits for its children,
# and beside, idle time is all the unit tests get. Serial on 2 cores, two workers took as long as
# one process (the slowest unit tests use both cores themselves).
TEST_PARTS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); if [ $$n -gt 2 ]; then echo parallel; \
	elif tests/low_cpu.sh --check 2>/dev/null; then echo beside; else echo serial; fi)
UNIT_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); if [ $$n -gt 2 ]; then echo $$n; \
	elif [ "$(TEST_PARTS)" = beside ]; then echo 2; else echo 0; fi)
# `make test-unit` alone: one worker per core on more than 2 cores, else one process (UNIT_WORKERS given wins)
UNIT_WORKERS_ALONE = $(if $(filter command line environment,$(origin UNIT_WORKERS)),$(UNIT_WORKERS),$(shell \
	n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 2 ] && echo $$n || echo 0))
JUNIT ?=
test: setup-all
	@$(engine_stopped_at_exit); \
	 BIN=$(BIN) TEST_PARTS=$(TEST_PARTS) UNIT_WORKERS=$(UNIT_WORKERS) JUNIT='$(JUNIT)' PYTEST_ARGS='$(PYTEST_ARGS)' \
	 ENGINE_FIRST='$(if $(WITH_COMPOSE),$(BIN)/eos-chaos images $(KAFKA_FLAG),true)' tests/suite.sh

# ruff (pyflakes, style, imports, bugbear) everywhere; mypy --strict on harness/ and chaos/
# (pyproject.toml's list; tests/unit/test_mypy_coverage.py). The layering contracts are a unit test (tests/unit/test_layers.py).
lint: setup-all
	@$(BIN)/ruff check --quiet harness chaos clusters tests
	@$(BIN)/mypy --no-error-summary

test-unit: setup-all
	@$(BIN)/pytest -m 'not chaos and not library' -n $(UNIT_WORKERS_ALONE) $(PYTEST_ARGS)

chaos: setup-all
	$(call pytest_with_engine,-m 'chaos and not library' $(PYTEST_ARGS))

# Every scenario of the library with the verdict it expects (long: ~40 min per backend).
library: setup-all
	$(call pytest_with_engine,-m library $(PYTEST_ARGS))

# Compose backend: Docker engine (Debian's dockerd started if none answers), Compose v2 and the
# images, built without a registry when the official ones cannot be pulled.
images: setup
	@$(BIN)/eos-chaos images $(KAFKA_FLAG)

# Both backends' clusters and leftovers of crashed runs; then the dockerd eos-chaos started, if any.
down: setup
	@$(BIN)/eos-chaos cluster down --backend local
	@$(BIN)/eos-chaos cluster down --backend compose
	@$(BIN)/eos-chaos engine down

# The tutorial's pictures of a report (valid, invalid, Spark) into docs/img/, from hand-written run
# folders in headless Chromium (Debian's; tests/screenshots.py): no cluster, nothing downloaded.
screenshots: setup-all
	@$(BIN)/python -m tests.screenshots docs/img

clean-cache:
	rm -rf $${EOS_CHAOS_CACHE:-$${XDG_CACHE_HOME:-$$HOME/.cache}/eos-chaos}
