# The newcomer's entry points; each one installs what it needs first.
.PHONY: setup demo test lint bench mutants

setup:
	scripts/bootstrap

# The App at work on this machine: a measured PR against a stand-in GitHub, its comment,
# check run and reactions on a local page kept up until Ctrl-C (docs/try.md).
demo: setup
	.venv/bin/perfbot try

lint: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy
	scripts/lint-workflows
	scripts/lint-dockerfile
	scripts/build-docs

test: lint
	.venv/bin/python -m pytest

bench: setup
	command -v wrk >/dev/null || (apt-get update -qq && apt-get install -y -qq wrk >/dev/null)
	.venv/bin/python bench/engine.py
	.venv/bin/python bench/ingest.py
	.venv/bin/python bench/service.py
	.venv/bin/python bench/statements.py
	.venv/bin/python bench/wire.py
	command -v valgrind >/dev/null || (apt-get update -qq && apt-get install -y -qq valgrind >/dev/null)
	.venv/bin/python bench/instructions.py
	.venv/bin/python bench/replicas.py
	.venv/bin/python bench/recovery.py
	.venv/bin/python bench/sweep.py
	.venv/bin/python bench/held_bodies.py
	.venv/bin/python bench/zip_names.py
	.venv/bin/python bench/measurements.py
	.venv/bin/python bench/signal_noise.py

# Switches each safeguard off in turn (in a copy of the checkout) and checks the suite fails.
mutants: setup
	.venv/bin/python scripts/mutants.py
