"""Events/s from Flume's own Java client (flume-ng-sdk 1.11.0, batches of ``--batch``) into Headrace's
FlumeAvroSource, beside the same client into a real Flume 1.11.0 agent in the same run.

- Headrace: a real ``connect-standalone`` with one FlumeAvroSource (ByteArrayConverter, linger.ms=0); a call
  is answered OK once the embedded log has its events (written to the segment: survives kill -9).
- Baseline: a Flume agent whose avro source puts into a file channel (Flume's durable channel; a put
  commits with an fsync) drained by a null sink.

Both sides get the same events (a ~20-byte body, three headers) from the same compiled client, ``--threads``
client threads each with its own connection; the wall runs from the client's first call to its last OK,
as the client measures it (JVM start-up excluded).

    python bench/bench_flume.py --events 200000 --batch 100
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from services.base import free_port, port_is_open  # noqa: E402
from services.flume import FlumeAgentService, flume_sender  # noqa: E402

FLUME_FILE_CHANNEL = textwrap.dedent("""
    a1.sources = r1
    a1.channels = c1
    a1.sinks = k1
    a1.sources.r1.type = avro
    a1.sources.r1.bind = 127.0.0.1
    a1.sources.r1.port = {port}
    a1.sources.r1.channels = c1
    a1.channels.c1.type = file
    a1.channels.c1.checkpointDir = {dir}/checkpoint
    a1.channels.c1.dataDirs = {dir}/data
    a1.channels.c1.transactionCapacity = 10000
    a1.sinks.k1.type = null
    a1.sinks.k1.channel = c1
    a1.sinks.k1.batchSize = 1000
""")


def _send(cp: str, port: int, events: int, batch: int, threads: int) -> float:
    done = subprocess.run(["java", "-cp", cp, "FlumeSend", "127.0.0.1", str(port), "0", str(events), str(batch),
                           "none", str(threads)], capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"FlumeSend failed:\n{done.stderr[-3000:]}")
    match = re.search(r"^rate (\d+)$", done.stdout, re.M)
    assert match, done.stdout[-500:]
    return float(match.group(1))


def _headrace(tmp: Path, cp: str, args: argparse.Namespace) -> float:
    tmp.mkdir(parents=True)
    port = free_port()
    (tmp / "worker.properties").write_text(textwrap.dedent(f"""
        embedded.log.dir={tmp}/data
        key.converter=org.apache.kafka.connect.storage.StringConverter
        value.converter=org.apache.kafka.connect.converters.ByteArrayConverter
        offset.storage.file.filename={tmp}/connect.offsets
        listeners=
    """))
    (tmp / "avro.properties").write_text(textwrap.dedent(f"""
        name=avro-in
        connector.class=FlumeAvroSource
        topic=flume
        listeners=tcp://127.0.0.1:{port}
        producer.override.linger.ms=0
    """))
    exe = Path(sys.executable).with_name("connect-standalone")
    with open(tmp / "worker.log", "wb") as out:
        worker = subprocess.Popen([str(exe), str(tmp / "worker.properties"), str(tmp / "avro.properties")],
                                  stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not port_is_open(port):
            if time.monotonic() > deadline or worker.poll() is not None:
                raise SystemExit(f"the worker did not start; see {tmp / 'worker.log'}")
            time.sleep(0.2)
        return _send(cp, port, args.events, args.batch, args.threads)
    finally:
        worker.terminate()
        worker.wait(30)


def _flume(tmp: Path, cp: str, args: argparse.Namespace) -> float:
    agent = FlumeAgentService(FLUME_FILE_CHANNEL, work_dir=tmp / "agent", heap="1g")
    agent.start()
    try:
        return _send(cp, agent.port, args.events, args.batch, args.threads)
    finally:
        agent.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1, help="client threads, each with its own connection")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-flume-") as tmp_name:
        tmp = Path(tmp_name)
        cp = flume_sender(tmp / "java")
        flume = _flume(tmp / "flume", cp, args)
        headrace = _headrace(tmp / "headrace", cp, args)
    print(f"{args.events} events, batches of {args.batch}, {args.threads} client thread(s), Flume's RpcClient 1.11.0")
    print(f"Flume 1.11.0 agent, avro source -> file channel : {flume:>9,.0f} events/s (baseline)")
    print(f"Headrace FlumeAvroSource -> embedded log        : {headrace:>9,.0f} events/s "
          f"({headrace / flume:.2f}x the Flume agent)")


if __name__ == "__main__":
    main()
