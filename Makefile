# Quickstart: `make demo` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
TILEPLAN := $(VENV)/bin/tileplan
REFERENCE := tests/data/reference_000.json

.PHONY: demo test install install-test clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PIP) install -e '.[test]'
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

demo: install
	mkdir -p out
	$(TILEPLAN) plan -o out/siglip-so400m-patch14-384.json -f
	$(TILEPLAN) check out/siglip-so400m-patch14-384.json

test: install-test
	$(PY) -m pytest

clean:
	rm -rf $(VENV) out
