#!/usr/bin/env bash
# Installs what is needed, then runs the whole test suite (unit and end-to-end against real services).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# everything below, and whatever the tests start, runs from the virtual environment install.sh filled
. scripts/venv.sh
headrace_venv
ruff check .
lint-imports          # the layer rules of ARCHITECTURE.md
mypy                  # connect/, rest/, plugins/ and spark_sinks/, as configured in pyproject.toml
NO_MKDOCS_2_WARNING=1 mkdocs build --strict --quiet --site-dir "$(mktemp -d)"  # the documentation site: a broken link fails it
# Two xdist workers: one runs every test needing Kafka or Spark's services, one at a time (--dist loadgroup,
# the "services" group of tests/conftest.py); the other runs the rest beside it, most of which wait on worker
# processes. --durations: the slowest 30, where the 30-minute budget goes.
python3 -m pytest -q -p no:cacheprovider -n 2 --dist loadgroup --durations=30 "$@"
