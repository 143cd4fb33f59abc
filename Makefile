# croupier: the front door. Every target bootstraps what it needs (.venv, broker jars),
# so on a fresh machine `make demo` or `make test` alone is enough.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
CROUPIER := $(VENV)/bin/croupier
STAMP := $(VENV)/.installed-stamp

.PHONY: help venv bytecode demo test test-unit test-integration simulate lint mutants bench bench-e2e bench-seamless schemas profiles-release profiles-check kafka-up kafka-down kafka-status topics clean

help:
	@echo "make demo        Kafka, topics, the four services, 3 tables and 50 players, then a"
	@echo "                 verified summary (DEMO_ARGS='--rounds 5' to shorten)"
	@echo "make test        the whole suite against a real Kafka broker, in TEST_WORKERS (2)"
	@echo "                 pytest-xdist processes"
	@echo "make simulate    the crash simulator: CROUPIER_CRASHSIM_SCHEDULES (10000) schedules"
	@echo "                 from seed CROUPIER_CRASHSIM_SEED (1) over every kernel service"
	@echo "make lint        ruff, vulture (dead code), then mypy (strict for shared/)"
	@echo "make mutants     plant one-line bugs in services/, one at a time, and run the crash"
	@echo "                 simulator on each (CROUPIER_MUTANTS_SCHEDULES per mutant; not part"
	@echo "                 of make test; MUTANTS_ARGS='--only W1,K2' or '--list')"
	@echo "make bench       benchmarks (ratios against a baseline measured in the same run);"
	@echo "                 the seamless-wallet and end-to-end ones last (BENCH_SEAMLESS_ARGS,"
	@echo "                 BENCH_E2E_ARGS='--quick' to shorten)"
	@echo "make bench-e2e   the end-to-end benchmark alone: broker, four services, players, tables"
	@echo "make bench-seamless  the seamless wallet (reference wallet at 5 and 50 ms) beside the"
	@echo "                 transfer wallet: accepted bets/s and HTTP p99 as ratios"
	@echo "make schemas     write the JSON Schema of every event to schemas/"
	@echo "make profiles-release  freeze each profile's version in shared/profiles/released/"
	@echo "                 (refused if a released version's content changed: bump its version)"
	@echo "make kafka-up | kafka-down | kafka-status | topics"
	@echo "make clean       stop the broker and remove runtime state and the venv"

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "croupier needs Python 3.11+")'
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[dev]'
	@touch $(STAMP)

venv: $(STAMP)

# the project's own modules compiled once: where PYTHONDONTWRITEBYTECODE is set (it is on
# this machine kind) every service, worker and CLI process would compile them again
bytecode: venv
	@$(PY) -m compileall -q -j 0 services shared tests benchmarks

kafka-up: venv
	$(CROUPIER) kafka up

kafka-down: venv
	$(CROUPIER) kafka down

kafka-status: venv
	$(CROUPIER) kafka status

topics: kafka-up
	$(CROUPIER) topics apply

demo: topics bytecode
	$(CROUPIER) demo $(DEMO_ARGS)

# the suite's modules in TEST_WORKERS pytest-xdist processes, each module whole in one
# (its platform and broker are module-scoped); TEST_WORKERS=0 runs it in this process
TEST_WORKERS ?= 2

test: venv bytecode
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile

test-unit: venv bytecode
	$(PY) -m pytest tests/unit

test-integration: venv bytecode
	$(PY) -m pytest tests/integration

simulate: venv bytecode
	$(PY) -m tests.crashsim

lint: venv
	$(VENV)/bin/ruff check shared services tests benchmarks
	$(VENV)/bin/vulture
	$(VENV)/bin/mypy

# the crash simulator against one-line bugs planted in the real code (tests/crashsim/mutants.py,
# docs/decisions/crash-simulator.md "Mutants"): within 20 minutes on 2 cores
mutants: venv
	$(PY) -m tests.crashsim.mutants $(MUTANTS_ARGS)

schemas: venv
	$(CROUPIER) schemas

profiles-release: venv
	$(CROUPIER) profiles release

profiles-check: venv
	$(CROUPIER) profiles check

bench: venv
	BENCH_SEAMLESS_ARGS="$(BENCH_SEAMLESS_ARGS)" BENCH_E2E_ARGS="$(BENCH_E2E_ARGS)" \
		$(PY) benchmarks/run.py

# the end-to-end benchmark alone: BENCH_E2E_ARGS="--quick" for a smoke run,
# "--sizes 100,1000,10000 --duration 20 --workers 2 --json e2e.json" and so on
bench-e2e: venv
	$(PY) benchmarks/bench_e2e.py $(BENCH_E2E_ARGS)

# the seamless wallet beside the transfer wallet alone: BENCH_SEAMLESS_ARGS="--quick",
# "--duration 15 --rate 500 --latencies 5,50 --json seamless.json" and so on
bench-seamless: venv
	$(PY) benchmarks/bench_seamless.py $(BENCH_SEAMLESS_ARGS)

clean:
	-[ -x $(CROUPIER) ] && $(CROUPIER) kafka down
	rm -rf var .pytest_cache .ruff_cache .mypy_cache .hypothesis $(VENV)

# ---- operations: Prometheus / Grafana tooling (deploy/prometheus, deploy/grafana) ----
# promtool + prometheus (rule checks, live Prometheus) and chromium (graph screenshot)
# from Debian, installed only when missing; the test targets depend on it.
.PHONY: prometheus-tools prometheus-check dashboards

prometheus-tools:
	deploy/prometheus/install-tools.sh prometheus chromium chromedriver

test test-unit test-integration: prometheus-tools

prometheus-check: prometheus-tools
	cd deploy/prometheus && promtool check config prometheus.yml && \
	  promtool check config prometheus.compose.yml && \
	  promtool check rules rules/recording.yml rules/alerts.yml && \
	  promtool test rules tests/alerts_test.yml

dashboards: venv
	$(PY) -m services.devtools.grafana_dashboards
