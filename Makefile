# Two commands: `make run` (the console on a working demo) and `make test` (the whole suite).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --disable-pip-version-check --progress-bar on -c constraints.txt
# gpu-check: the venv's python, unless PYTHON is given (a GPU box: `make gpu-check PYTHON=python3`).
GPU_PY := $(if $(filter command line,$(origin PYTHON)),$(PYTHON),$(if $(wildcard $(PY)),$(PY),$(PYTHON)))

.PHONY: run test lint bench clean gpu-check

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml constraints.txt | $(PY)
	@echo "installing trainconsole with every extra ('.[all]': torch with its CUDA libraries, Ray, ...) into $(VENV): about 6.4 GB, several minutes the first time"
	$(PIP) -e '.[all]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml constraints.txt | $(PY)
	@echo "installing trainconsole with every extra and the test tools ('.[all,dev]') into $(VENV): about 6.4 GB, several minutes the first time"
	$(PIP) -e '.[all,dev]'
	touch $@ $(VENV)/.installed

run: $(VENV)/.installed
	$(VENV)/bin/trainconsole

test: $(VENV)/.installed-dev
	@command -v tmux >/dev/null || apt-get install -y -qq tmux >/dev/null 2>&1 || echo "tmux missing: the e2e tests will be skipped"
	@{ [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; } || { apt-get update -qq; apt-get install -y -qq chromium chromium-driver; } >/dev/null 2>&1 || echo "chromium missing: the browser tests of serve will be skipped"
	@{ command -v slurmctld && command -v slurmd && command -v munged; } >/dev/null || { apt-get update -qq; apt-get install -y -qq slurm-wlm munge; } >/dev/null 2>&1 || echo "slurm-wlm or munge missing: the Slurm tests will be skipped"
	@{ command -v slurmdbd && command -v mariadbd; } >/dev/null || { apt-get update -qq; apt-get install -y -qq slurmdbd mariadb-server; } >/dev/null 2>&1 || echo "slurmdbd or mariadb-server missing: the Slurm tests run without accounting"
	$(VENV)/bin/ruff check trainconsole tests benchmarks
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -q -p no:cacheprovider --durations=30; rc=$$?; [ $$rc -eq 5 ] && { echo "no tests collected"; exit 1; }; exit $$rc

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check trainconsole tests benchmarks
	$(VENV)/bin/lint-imports

bench: $(VENV)/.installed
	$(PY) benchmarks/overhead.py

# Every CUDA path on this machine's GPU(s), with its own python and torch (no venv, nothing downloaded);
# writes docs/GPU.md. Without a GPU each check says SKIPPED.
gpu-check:
	$(GPU_PY) benchmarks/gpu_check.py

clean:
	rm -rf $(VENV)
