#!/usr/bin/env bash
# Installs what is needed, then runs the whole test suite (unit and end-to-end against real services).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
ruff check .
lint-imports          # the layer rules of ARCHITECTURE.md
mypy                  # connect/, as configured in pyproject.toml
# Two xdist workers: one runs every test needing Kafka or Spark's services, one at a time (--dist loadgroup,
# the "services" group of tests/conftest.py); the other runs the rest beside it, most of which wait on worker
# processes. --durations: the slowest 30, where the 30-minute budget goes.
python3 -m pytest -q -p no:cacheprovider -n 2 --dist loadgroup --durations=30 "$@"
