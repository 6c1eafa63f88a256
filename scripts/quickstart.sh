#!/usr/bin/env bash
# Installs Headrace and runs the Kafka Connect file quickstart on the embedded log (no Kafka):
# lines appended to test.txt are copied, through topic connect-test, into test.sink.txt.
# Only the package itself is installed, into the project's virtual environment .venv (scripts/venv.sh): the
# test extras (PySpark, ...), Debian packages and service jars that scripts/install.sh adds are for the test
# suite, and a file copy needs none of them. Exits non-zero unless all 5 lines were copied.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh
headrace_venv
python -m pip install --quiet --disable-pip-version-check -e .
# the REST address the worker listens on, from the shipped worker config
rest_url=$(sed -n 's/^listeners=\([^,]*\).*/\1/p' configs/connect-standalone.properties | head -n 1)
repo=$PWD
workdir=$(mktemp -d)
cp configs/*.properties "$workdir/"
cd "$workdir"
seq 1 5 | sed 's/^/hello headrace line /' > test.txt
connect-standalone connect-standalone.properties connect-file-source.properties connect-file-sink.properties \
  > worker.log 2>&1 &
worker=$!
trap 'kill $worker 2>/dev/null || true' EXIT
copied=0
for _ in $(seq 1 120); do
  if [ -f test.sink.txt ]; then copied=$(wc -l < test.sink.txt); fi
  [ "$copied" -ge 5 ] && break
  kill -0 $worker 2>/dev/null || break  # the worker stopped: no use waiting for it
  sleep 0.5
done
if [ "$copied" -lt 5 ]; then
  if kill -0 $worker 2>/dev/null; then when="within 60 s"; else when="before it stopped"; fi
  echo "error: the worker copied $copied of the 5 lines of test.txt into test.sink.txt $when; its log ($workdir/worker.log) ends with:" >&2
  tail -n 20 worker.log >&2
  exit 1
fi
echo "--- test.sink.txt (copied by the worker from test.txt):"
cat test.sink.txt
echo "--- the topic, read back with the console consumer:"
headrace console-consumer -c connect-standalone.properties --topic connect-test --from-beginning --timeout-ms 2000
if [ -n "$rest_url" ]; then
  echo "--- connector status over REST (GET $rest_url/connectors?expand=status):"
  # Python rather than curl, which a stock Debian may not have
  python -c '
import sys, urllib.request
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())
except OSError as e:
    sys.exit(f"error: GET {sys.argv[1]}: {e}")
' "$rest_url/connectors?expand=status"
fi
kill $worker
wait $worker || true  # its exit status on SIGTERM is not the quickstart's
trap - EXIT
echo "Quickstart files are in $workdir (worker log: $workdir/worker.log)"
echo "Headrace is installed in the virtual environment $HEADRACE_VENV; to use its commands in your shell, activate it:"
case "$HEADRACE_VENV" in
  "$repo"/*) echo "  cd $repo && . ${HEADRACE_VENV#"$repo"/}/bin/activate" ;;
  *) echo "  . $HEADRACE_VENV/bin/activate" ;;
esac
