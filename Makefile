# eos-chaos: `make run` (smoke run on a local cluster) and `make test` (the test suite).
# Both do the set-up first; a second set-up with everything cached takes a second or two.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The venv is rebuilt only when pyproject.toml changes.
STAMP := $(VENV)/.installed-$(shell sha1sum pyproject.toml 2>/dev/null | cut -c1-12)
KAFKA_VERSION ?=
KAFKA_FLAG := $(if $(KAFKA_VERSION),--kafka-version $(KAFKA_VERSION))
PYTEST_ARGS ?=

.PHONY: setup run test test-unit chaos clean-cache down images

setup: $(STAMP)
	@$(BIN)/eos-chaos setup $(KAFKA_FLAG)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 2)' || \
	  { echo "error: $(PYTHON) is $$($(PYTHON) --version 2>&1); eos-chaos needs Python 3.11+ (PYTHON=python3.11 make ...)" >&2; exit 2; }
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	@echo "installing eos-chaos and its test extras into $(VENV)/"
	@$(BIN)/python -m pip install -q -e '.[test]'
	@rm -f $(VENV)/.installed-* && touch $@

run: setup
	@$(BIN)/eos-chaos smoke $(KAFKA_FLAG)

test: setup
	@$(BIN)/pytest $(PYTEST_ARGS)

test-unit: setup
	@$(BIN)/pytest -m 'not chaos' $(PYTEST_ARGS)

chaos: setup
	@$(BIN)/pytest -m chaos $(PYTEST_ARGS)

# Compose backend (in progress): Docker engine, Compose v2 and the images, built without a registry.
images: setup
	@$(BIN)/eos-chaos images $(KAFKA_FLAG)

down: setup
	@$(BIN)/eos-chaos cluster down

clean-cache:
	rm -rf $${EOS_CHAOS_CACHE:-$${XDG_CACHE_HOME:-$$HOME/.cache}/eos-chaos}
