"""Log events/s into the log through HttpSource and through the Python appender, and the appender's cost per call.

Every figure beside its baseline from the same run:

- HttpSource: NDJSON POSTs of ``--batch`` events (default 1,000) from ``--clients`` client threads into a real
  ``connect-standalone`` (JsonConverter, no schemas), acknowledged after the log has them. Baseline: a
  bare cheroot WSGI server (the same thread pool) that appends each body's lines, as they came, to the same
  kind of embedded log with one ``send_batch`` + ``flush`` and answers 200. Wall from the first POST to the
  last 200.
- Appender: an app process logs ``--events`` records through ``HeadraceHandler`` to each of the two
  servers; wall from the first ``log.info`` to ``flush()`` returning (every event acknowledged).
- Per call: ``log.info("...%d", i)`` in the app thread with a ``logging.NullHandler`` against the same
  logger with a ``HeadraceHandler`` shipping to the bare server (its shipper thread running meanwhile):
  wall time per call, and the app thread's own CPU time per call (``time.thread_time``), which leaves out
  the time the app thread waits while the shipper thread holds the GIL.
- Each POST figure also gives the server process's CPU time per event (``/proc``), for where the time goes.

    python bench/bench_ingest.py --events 200000
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import httpx

BARE_SERVER = textwrap.dedent("""
    import sys
    from cheroot import wsgi
    from connect.log import open_log_backend

    port, log_dir, threads = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    backend = open_log_backend({"embedded.log.dir": log_dir}, owner=True)
    admin = backend.admin()
    from connect.log.api import NewTopic
    admin.create_topic(NewTopic("bare", 1), exist_ok=True)
    producer = backend.producer()
    import threading
    lock = threading.Lock()

    def app(environ, start_response):
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        lines = [line for line in body.split(b"\\n") if line]
        with lock:
            producer.send_batch("bare", 0, lines)
            producer.flush()
        start_response("200 OK", [("Content-Type", "application/json")])
        return [b'{"accepted": %d}' % len(lines)]

    server = wsgi.Server(("127.0.0.1", port), app, numthreads=threads)
    print("ready", flush=True)
    server.safe_start()
""")

APP = textwrap.dedent("""
    import logging, sys, time
    from connect.appender import HeadraceHandler
    url, events = sys.argv[1], int(sys.argv[2])
    handler = HeadraceHandler(url, queue_size=events + 1, batch_size=1000, close_timeout=120)
    log = logging.getLogger("bench")
    log.propagate = False
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    started = time.perf_counter()
    for i in range(events):
        log.info("request %d served in %d ms", i, i % 97, extra={"seq": i})
    logged = time.perf_counter()
    assert handler.flush(300), "not delivered"
    done = time.perf_counter()
    print(f"{logged - started} {done - started} {handler.sent} {handler.dropped}")
    handler.close()
""")

PER_CALL = textwrap.dedent("""
    import logging, sys, time
    from connect.appender import HeadraceHandler
    url, calls = sys.argv[1], int(sys.argv[2])

    def run(handler):
        log = logging.getLogger(f"percall.{id(handler)}")
        log.propagate = False
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        for i in range(2000):
            log.info("warm-up %d", i)
        started, cpu = time.perf_counter(), time.thread_time()
        for i in range(calls):
            log.info("request %d served in %d ms", i, i % 97)
        # wall time (what the app waits, the shipper's turns on the GIL included) and this thread's own CPU
        return (time.perf_counter() - started) / calls, (time.thread_time() - cpu) / calls

    null, null_cpu = run(logging.NullHandler())
    handler = HeadraceHandler(url, queue_size=calls + 5000, batch_size=1000, close_timeout=120)
    shipping, shipping_cpu = run(handler)
    handler.flush(300)
    handler.close()
    print(f"{null} {shipping} {handler.dropped} {null_cpu} {shipping_cpu}")
""")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise SystemExit(f"timed out waiting for {what}")


def _body(start: int, batch: int) -> bytes:
    return b"".join(json.dumps({"@timestamp": "2026-11-24T12:00:00.000000Z", "message": f"request {i} served",
                                "log": {"level": "INFO", "logger": "bench.app"},
                                "process": {"pid": 4242, "thread": {"name": "MainThread"}},
                                "labels": {"seq": i}}).encode() + b"\n" for i in range(start, start + batch))


def _post_all(url: str, events: int, batch: int, clients: int) -> float:
    bodies = [_body(i, min(batch, events - i)) for i in range(0, events, batch)]
    errors: list[str] = []

    def client(part: list[bytes]) -> None:
        with httpx.Client(timeout=120) as http:
            for body in part:
                r = http.post(url, content=body)
                if r.status_code != 200:
                    errors.append(f"{r.status_code} {r.text[:100]}")
                    return

    threads = [threading.Thread(target=client, args=(bodies[k::clients],)) for k in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    if errors:
        raise SystemExit(f"a POST failed: {errors[0]}")
    return elapsed


class Servers:
    """The worker with HttpSource and the bare server, each on its own embedded log."""

    def __init__(self, work: Path, threads: int) -> None:
        self.work = work
        self.procs: list[subprocess.Popen[bytes]] = []
        self.http_port, self.bare_port = _free_port(), _free_port()
        (work / "worker.properties").write_text(
            f"embedded.log.dir={work / 'data'}\nkey.converter=org.apache.kafka.connect.storage.StringConverter\n"
            "value.converter=org.apache.kafka.connect.json.JsonConverter\nvalue.converter.schemas.enable=false\n"
            f"offset.storage.file.filename={work / 'offsets'}\nlisteners=\n")
        (work / "http.properties").write_text(
            f"name=bench-http\nconnector.class=HttpSource\ntopic=logs\nlisteners=http://127.0.0.1:{self.http_port}\n"
            f"http.threads={threads}\n")
        exe = Path(sys.executable).with_name("connect-standalone")
        with open(work / "worker.log", "wb") as log:
            self.procs.append(subprocess.Popen([str(exe), str(work / "worker.properties"), str(work / "http.properties")],
                                               stdout=log, stderr=subprocess.STDOUT))
        (work / "bare.py").write_text(BARE_SERVER)
        with open(work / "bare.log", "wb") as log:
            self.procs.append(subprocess.Popen([sys.executable, str(work / "bare.py"), str(self.bare_port),
                                                str(work / "bare-data"), str(threads)], stdout=log,
                                               stderr=subprocess.STDOUT))
        for port in (self.http_port, self.bare_port):
            _wait(lambda p=port: _listening(p), 60, f"port {port}")

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/"

    @property
    def bare_url(self) -> str:
        return f"http://127.0.0.1:{self.bare_port}/"

    def close(self) -> None:
        for proc in self.procs:
            proc.terminate()
            proc.wait(30)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc), to say what a figure cost the server."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _app(script: str, *args: str) -> list[float]:
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=900,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return [float(x) for x in done.stdout.split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--threads", type=int, default=16, help="HTTP server threads, both servers")
    parser.add_argument("--calls", type=int, default=200_000, help="log.info calls for the per-call cost")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        servers = Servers(Path(tmp), args.threads)
        try:
            print(f"{args.events:,} events, NDJSON batches of {args.batch:,}, {args.clients} client threads, "
                  f"{os.cpu_count()} cores")
            pids = {"bare server": servers.procs[1].pid, "HttpSource": servers.procs[0].pid}
            for name, url in (("bare server", servers.bare_url), ("HttpSource", servers.http_url)):
                _post_all(url, 10 * args.batch, args.batch, args.clients)  # warm-up (topic creation, imports)
                cpu = _cpu_seconds(pids[name])
                elapsed = _post_all(url, args.events, args.batch, args.clients)
                cpu = _cpu_seconds(pids[name]) - cpu
                print(f"POST NDJSON -> {name:12s} {args.events / elapsed:>10,.0f} events/s   ({elapsed:.2f} s; "
                      f"server CPU {cpu / args.events * 1e6:.2f} us/event)")
            for name, url in (("bare server", servers.bare_url), ("HttpSource", servers.http_url)):
                logged, delivered, sent, dropped = _app(APP, url, str(args.events))
                print(f"appender -> {name:15s} {args.events / delivered:>10,.0f} events/s delivered   "
                      f"(logging calls took {logged:.2f} s, all acknowledged after {delivered:.2f} s; "
                      f"sent {sent:,.0f}, dropped {dropped:,.0f})")
            null, shipping, dropped, null_cpu, shipping_cpu = _app(PER_CALL, servers.bare_url, str(args.calls))
            print(f"log.info per call: NullHandler {null * 1e6:.2f} us, HeadraceHandler {shipping * 1e6:.2f} us "
                  f"(+{(shipping - null) * 1e6:.2f} us in the app thread, shipper running; dropped {dropped:,.0f})")
            print(f"  the app thread's own CPU per call: NullHandler {null_cpu * 1e6:.2f} us, HeadraceHandler "
                  f"{shipping_cpu * 1e6:.2f} us (+{(shipping_cpu - null_cpu) * 1e6:.2f} us; the rest of the wall "
                  "figure is the shipper thread's time on the GIL)")
        finally:
            servers.close()


if __name__ == "__main__":
    main()
