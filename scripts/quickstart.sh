#!/usr/bin/env bash
# Installs Headrace and runs the Kafka Connect file quickstart on the embedded log (no Kafka):
# lines appended to test.txt are copied, through topic connect-test, into test.sink.txt.
# Only the package itself is installed: the test extras (PySpark, ...), Debian packages and service
# jars that scripts/install.sh adds are for the test suite, and a file copy needs none of them.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e .
workdir=$(mktemp -d)
cp configs/*.properties "$workdir/"
cd "$workdir"
seq 1 5 | sed 's/^/hello headrace line /' > test.txt
connect-standalone connect-standalone.properties connect-file-source.properties connect-file-sink.properties \
  > worker.log 2>&1 &
worker=$!
trap 'kill $worker 2>/dev/null || true' EXIT
for _ in $(seq 1 60); do
  [ -f test.sink.txt ] && [ "$(wc -l < test.sink.txt)" -ge 5 ] && break
  sleep 0.5
done
echo "--- test.sink.txt (copied by the worker from test.txt):"
cat test.sink.txt
echo "--- the topic, read back with the console consumer:"
headrace console-consumer -c connect-standalone.properties --topic connect-test --from-beginning --timeout-ms 2000
echo "--- connector status over REST:"
curl -s http://127.0.0.1:8083/connectors?expand=status; echo
echo "Quickstart files are in $workdir (worker log: $workdir/worker.log)"
