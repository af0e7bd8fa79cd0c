# Every target prepares what it needs; all are safe to repeat.
VENV      := .venv
PY        := $(VENV)/bin/python
STAMP     := $(VENV)/.installed
HOST      ?= 127.0.0.1
PORT      ?= 8778
export PLACEMENT_DATABASE_URL ?= sqlite+aiosqlite:///$(CURDIR)/var/placement.sqlite

.PHONY: install run test lint openapi openapi-check bench demo pg-up keystone mariadb-up chromium patroni clean dist

install: $(STAMP)

$(STAMP): pyproject.toml requirements.lock scripts/bootstrap.sh
	./scripts/bootstrap.sh
	@touch $(STAMP)

run: install
	@mkdir -p var
	$(PY) -m placement_api db upgrade
	$(PY) -m placement_api serve --host $(HOST) --port $(PORT)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy placement_api placement_client agent scheduler flavors tests bench
	$(VENV)/bin/lint-imports --no-cache
	$(PY) scripts/check_internals.py

pg-up:
	@./scripts/ensure-postgresql.sh

# Keystone from PyPI in a venv of its own (var/keystone-venv) for the tests
# and the benchmark that run a real Keystone; reused while it is current.
keystone:
	@./scripts/install-keystone.sh

# Upstream Placement's usual database, for the db import/export tests.
mariadb-up:
	@./scripts/ensure-mariadb.sh

# Debian's headless Chromium and chromedriver, for the dashboard's browser test.
chromium:
	@./scripts/ensure-chromium.sh

# Debian's Patroni, etcd and haproxy, for the high-availability tests (tests/ha/).
patroni:
	@./scripts/ensure-patroni.sh

# One pytest run covers both backends: database fixtures are parametrised
# over PLACEMENT_TEST_BACKENDS (default "sqlite,postgresql").
test: lint pg-up keystone mariadb-up chromium patroni openapi-check
	$(PY) -m pytest -n 2 --dist loadgroup -q

openapi: install
	$(PY) -m placement_api openapi --output openapi.yaml
	$(PY) -m scheduler openapi --output openapi-scheduler.yaml

openapi-check: install
	$(PY) -m placement_api openapi --check openapi.yaml
	$(PY) -m scheduler openapi --check openapi-scheduler.yaml

# docs/configuration.md is generated from the settings classes; make test
# fails when it is stale (tests/unit/test_config_reference.py), as docs-check does.
.PHONY: docs docs-check
docs: install
	$(PY) scripts/config_reference.py --output docs/configuration.md

docs-check: install
	$(PY) scripts/config_reference.py --check docs/configuration.md

# Benchmarks (never timed unit tests). BENCH_ARGS are passed through, e.g.
# make bench BENCH_ARGS="candidates --quick".
bench: install pg-up mariadb-up
	$(PY) -m bench $(BENCH_ARGS)

demo: install
	$(PY) -m scheduler.serving.demo

# The wheel that docs/deploy.md installs (tests/e2e/test_wheel.py proves it).
dist: install
	$(PY) -m pip wheel --no-deps -w dist .

clean:
	rm -rf $(VENV) var dist build .mypy_cache .ruff_cache .pytest_cache
