# The newcomer's entry points; each one installs what it needs first.
.PHONY: setup demo test lint bench

setup:
	scripts/bootstrap

demo: setup
	.venv/bin/perfbot compare examples/demo --exit-zero

lint: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy
	scripts/lint-workflows
	scripts/lint-dockerfile

test: lint
	.venv/bin/python -m pytest

bench: setup
	command -v wrk >/dev/null || (apt-get update -qq && apt-get install -y -qq wrk >/dev/null)
	.venv/bin/python bench/engine.py
	.venv/bin/python bench/ingest.py
	.venv/bin/python bench/service.py
	.venv/bin/python bench/replicas.py
