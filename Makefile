# Quickstart: `make demo` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
TILEPLAN := $(VENV)/bin/tileplan
REFERENCE := tests/data/reference_000.json
REPORT := out/siglip-so400m-patch14-384
CHROMIUM := /usr/bin/chromium

.PHONY: demo test lint install install-render install-test chromium clean

# tileplan's own modules compiled to bytecode: an editable install is not, and where
# PYTHONDONTWRITEBYTECODE is set every run would compile them again (0.3 s a command)
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -e .
	$(PY) -m compileall -q src/tileplan
	touch $@

$(VENV)/.installed-render: $(VENV)/.installed
	$(PIP) install -e '.[render]'
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PIP) install -e '.[render,test,import]'
	touch $@

install: $(VENV)/.installed
install-render: $(VENV)/.installed-render
install-test: $(VENV)/.installed-test

# The browser test drives Debian's chromium (never a downloaded browser); as root.
chromium:
	@test -x $(CHROMIUM) || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; }

demo: install-render
	$(PY) -m compileall -q src/tileplan
	mkdir -p out
	$(TILEPLAN) plan -o $(REPORT).json -f
	$(TILEPLAN) check $(REPORT).json
	$(TILEPLAN) html $(REPORT).json -f
	$(TILEPLAN) plot $(REPORT).json -f
	$(TILEPLAN) summary $(REPORT).json

# the suite over both cores of the 2-core machine it is timed on (pytest-xdist)
test: install-test chromium lint
	$(PY) -m pytest -n 2

# The lint and type checks we hold ourselves to (configuration in pyproject.toml).
lint: install-test
	$(PY) -m ruff check src tests benchmarks
	$(PY) -m mypy

clean:
	rm -rf $(VENV) out
