# The two commands of the README:
#   make run    set up and start the broker (single node, 127.0.0.1:1883, ./data)
#   make test   set up (system packages, .venv, all extras) and run the whole suite
#   make soak   the crash checker on new random seeds: SECONDS=3600 (default 600) or SEEDS=1000,
#               JOBS=4 at once;
#               failures (seed, replay command, summary, broker log tail) go to soak-failures.txt
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
EXTRAS := test,bench,pipeline

.PHONY: run test sysdeps venv lint typecheck pytest statecharts docs bench soak clean

run: venv
	$(BIN)/actorbroker serve $(if $(CONFIG),--config $(CONFIG))

test: sysdeps venv lint typecheck pytest

sysdeps:
	@bash scripts/install-sysdeps.sh

venv: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[$(EXTRAS)]'
	touch $(STAMP)

lint: venv
	$(BIN)/lint-imports

typecheck: venv
	$(BIN)/mypy -p actorbroker.codec -p actorbroker.routing -p actorbroker.session -p supervisors -p actorbroker.config -m actorbroker.errors -m actorbroker.cli -p actorbroker.transport -m actorbroker.messages -p actorbroker.actors -m actorbroker.app -m actorbroker.metrics -m actorbroker.testing -p actorbroker.persistence -p actorbroker.durable -p actorbroker.auth

pytest: venv
	$(BIN)/python -m pytest

statecharts: venv
	$(BIN)/python -m actorbroker.statecharts --write

docs: statecharts
	$(BIN)/python -m actorbroker.config --write

bench: sysdeps venv
	$(BIN)/python -m bench

soak: venv
	$(BIN)/python -m tests.crashcheck --soak $(if $(SECONDS),--seconds $(SECONDS)) $(if $(SEEDS),--seeds $(SEEDS)) --jobs $(or $(JOBS),1) --out soak-failures.txt

clean:
	rm -rf $(VENV) build *.egg-info .hypothesis .mypy_cache
