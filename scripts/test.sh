#!/usr/bin/env bash
# Installs what is needed, then runs the whole test suite (unit and end-to-end against real services).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
ruff check .
lint-imports          # the layer rules of ARCHITECTURE.md
mypy                  # connect/, as configured in pyproject.toml
python3 -m pytest -q -p no:cacheprovider --durations=30 "$@"  # the slowest 30: where the 30-minute budget goes
