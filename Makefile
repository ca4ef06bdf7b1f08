# The two commands of the README:
#   make run    set up the broker's own dependencies and start it (127.0.0.1:1883, ./data);
#               CONFIG=FILE, PORT=N, ARGS="--log-level debug ..." are passed to `serve`
#   make test   set up (system packages, .venv, all extras) and run the whole suite
# Both install the exact versions of constraints.txt (`make constraints` refreshes it).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
EXTRAS := test,bench,pipeline
PIP    := $(BIN)/python -m pip install -q -c constraints.txt
DEPS   := setup.cfg pyproject.toml constraints.txt

.PHONY: run test sysdeps venv venv-run lint typecheck pytest statecharts docs bench constraints clean

run: venv-run
	$(BIN)/actorbroker serve $(if $(CONFIG),--config $(CONFIG)) $(if $(PORT),--port $(PORT)) $(ARGS)

test: sysdeps venv lint typecheck pytest

sysdeps:
	@bash scripts/install-sysdeps.sh

# The broker alone (pykka, uvloop, dill): what `make run` needs, in seconds.
venv-run: $(VENV)/.installed-run

$(VENV)/.installed-run: $(DEPS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) -e .
	touch $@

# Every extra: tests, linters, benchmarks, the Spark pipeline.
venv: $(VENV)/.installed-all

$(VENV)/.installed-all: $(DEPS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(PIP) -e '.[$(EXTRAS)]'
	touch $@ $(VENV)/.installed-run

# On purpose only: pins what the ranges of setup.cfg resolve to today.
constraints:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q --upgrade --upgrade-strategy eager -e '.[$(EXTRAS)]'
	$(BIN)/python scripts/freeze-constraints.py $(EXTRAS) constraints.txt
	touch $(VENV)/.installed-all $(VENV)/.installed-run

lint: venv
	$(BIN)/lint-imports

typecheck: venv
	$(BIN)/mypy -p actorbroker.codec -p actorbroker.routing -p actorbroker.session -p supervisors -p actorbroker.config -m actorbroker.errors -m actorbroker.cli -p actorbroker.transport -m actorbroker.messages -p actorbroker.actors -m actorbroker.app -m actorbroker.metrics -m actorbroker.testing -m actorbroker.startup -p actorbroker.persistence -p actorbroker.durable -p actorbroker.auth

pytest: venv
	$(BIN)/python -m pytest

statecharts: venv
	$(BIN)/python -m actorbroker.statecharts --write

docs: statecharts
	$(BIN)/python -m actorbroker.config --write

bench: sysdeps venv
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build *.egg-info .hypothesis .mypy_cache
