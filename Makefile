# Two commands: `make run` (the console on a working demo) and `make test` (the whole suite).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --quiet --disable-pip-version-check

.PHONY: run test lint bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(PY)
	$(PIP) -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(PY)
	$(PIP) -e '.[dev]'
	touch $@ $(VENV)/.installed

run: $(VENV)/.installed
	$(VENV)/bin/trainconsole

test: $(VENV)/.installed-dev
	@command -v tmux >/dev/null || apt-get install -y -qq tmux >/dev/null 2>&1 || echo "tmux missing: the e2e tests will be skipped"
	$(VENV)/bin/ruff check console trainers tests benchmarks
	$(PY) -m pytest -q -p no:cacheprovider; rc=$$?; [ $$rc -eq 5 ] && { echo "no tests collected"; exit 1; }; exit $$rc

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check console trainers tests benchmarks

bench: $(VENV)/.installed
	$(PY) benchmarks/overhead.py

clean:
	rm -rf $(VENV)
