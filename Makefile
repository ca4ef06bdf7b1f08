# The two commands of the README:
#   make run    set up the broker's own dependencies and start it (127.0.0.1:1883, ./data),
#               with /metrics and the admin API on http://127.0.0.1:18083 (HTTP_PORT=N);
#               CONFIG=FILE, PORT=N, ARGS="--log-level debug ..." are passed to `serve`
#   make test   set up (system packages, .venv, all extras) and run the whole suite
#   make soak   the crash checker on new random seeds: SECONDS=3600 (default 600) or SEEDS=1000,
#               JOBS=4 at once;
#               failures (seed, replay command, summary, broker log tail) go to soak-failures.txt
# Installs take the exact versions of constraints.txt (`make constraints` refreshes it).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
EXTRAS := test,bench,pipeline
DEPS   := setup.cfg pyproject.toml constraints.txt
# The venv's own pip when it has one, else the host's (pip 22.3+ installs into
# another interpreter with --python).
PIP_CMD = $$(test -x $(BIN)/pip && echo $(BIN)/python -m pip || echo $(PYTHON) -m pip --python $(BIN)/python)
PIP     = $(PIP_CMD) install -q -c constraints.txt

.PHONY: run test sysdeps venv venv-run lint typecheck pytest statecharts docs bench soak constraints clean

# The broker runs from this tree: no package build, so a fresh clone serves in seconds.
run: venv-run
	$(BIN)/python -m actorbroker.cli serve $(if $(CONFIG),--config $(CONFIG)) $(if $(PORT),--port $(PORT)) --http-port $(or $(HTTP_PORT),18083) $(ARGS)

test: sysdeps venv lint typecheck pytest

sysdeps:
	@bash scripts/install-sysdeps.sh

# Without a pip of its own when the host's can fill it: ensurepip alone takes 4 s
# on an idle machine and 20 s on a busy one.
$(BIN)/python:
	$(PYTHON) -m venv --without-pip $(VENV)
	$(PYTHON) -m pip --python $(BIN)/python --version >/dev/null 2>&1 || $(BIN)/python -m ensurepip -q

# The broker's own dependencies (pykka, uvloop, dill, websockets), as setup.cfg lists them.
venv-run: $(VENV)/.installed-run

$(VENV)/.installed-run: $(DEPS) | $(BIN)/python
	$(PYTHON) scripts/broker-requirements.py > $(VENV)/requirements-run.txt
	@echo "pip install -c constraints.txt -r $(VENV)/requirements-run.txt"
	@$(PIP) -r $(VENV)/requirements-run.txt
	touch $@

# The package (editable) with every extra: tests, linters, benchmarks, the Spark pipeline.
venv: $(VENV)/.installed-all

$(VENV)/.installed-all: $(DEPS) | $(BIN)/python
	$(PIP_CMD) install -q --upgrade pip
	$(PIP) -e '.[$(EXTRAS)]'
	touch $@ $(VENV)/.installed-run

# On purpose only: pins what the ranges of setup.cfg resolve to today.
constraints: | $(BIN)/python
	$(PIP_CMD) install -q --upgrade pip
	$(PIP_CMD) install -q --upgrade --upgrade-strategy eager -e '.[$(EXTRAS)]'
	$(BIN)/python scripts/freeze-constraints.py $(EXTRAS) constraints.txt
	touch $(VENV)/.installed-all $(VENV)/.installed-run

lint: venv
	$(BIN)/lint-imports
	$(BIN)/ruff check actorbroker supervisors tests bench scripts

typecheck: venv
	$(BIN)/mypy -p actorbroker.codec -p actorbroker.routing -p actorbroker.session -p supervisors -p actorbroker.config -m actorbroker.errors -m actorbroker.cli -m actorbroker.ctl -p actorbroker.transport -m actorbroker.ports -p actorbroker.actors -m actorbroker.app -m actorbroker.metrics -m actorbroker.testing -m actorbroker.startup -p actorbroker.ops -p actorbroker.persistence -p actorbroker.durable -p actorbroker.auth -m actorbroker.logbudget -m actorbroker.logsetup -m actorbroker.reload

pytest: venv
	$(BIN)/python -m pytest

statecharts: venv
	$(BIN)/python -m actorbroker.statecharts --write

docs: statecharts
	$(BIN)/python -m actorbroker.config --write
	$(BIN)/python -m actorbroker.ops.docs --write

bench: sysdeps venv
	$(BIN)/python -m bench

soak: venv
	$(BIN)/python -m tests.crashcheck --soak $(if $(SECONDS),--seconds $(SECONDS)) $(if $(SEEDS),--seeds $(SEEDS)) --jobs $(or $(JOBS),1) --out soak-failures.txt

clean:
	rm -rf $(VENV) build *.egg-info .hypothesis .mypy_cache
