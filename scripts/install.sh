#!/usr/bin/env bash
# Installs everything Headrace and its test suite need on a fresh Debian machine:
# the Python package with its test extras (into the virtual environment .venv, see scripts/venv.sh), Debian
# packages, and the Maven-fetched service jars.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh
headrace_venv
python -m pip install --quiet --disable-pip-version-check -e ".[test]"
# the example plugin package of the plugin author's guide: tests/e2e/test_example_plugin.py runs it end to end,
# found through its entry points as a user's installed plugin is
python -m pip install --quiet --disable-pip-version-check -e examples/headrace-example-plugin

# Debian packages: kcat (an independent Kafka client for interoperability tests), redis-server, and openssl
# (the REST TLS tests make their certificates with it).
need_apt=()
command -v kcat >/dev/null 2>&1 || need_apt+=(kcat)
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
# iproute2: the multi-host tests put the broker and each worker in a network namespace of their own (ip netns)
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
# chromium (with its chromedriver): the headless browser the /ui status-page tests drive through Playwright.
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium chromium-driver)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# Service jars (Kafka, Apache Kafka Connect, HDFS, OpenSearch, Elasticsearch, Spark's Kafka and Avro modules, Flume, Log4j 2's KafkaAppender) from Maven Central into .cache/services; skipped when already there.
if [ "${HEADRACE_SKIP_SERVICES:-0}" != 1 ] && [ -f services/__main__.py ]; then
  python -m services fetch kafka connect hdfs opensearch elasticsearch spark-kafka flume log4j-kafka
fi
