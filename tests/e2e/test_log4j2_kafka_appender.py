"""The no-loss settings of configs/log4j2-kafka.xml (the Log4j 2 → Kafka recipe of docs/guide/connectors/ingestion.md) against the real
KafkaAppender of log4j-core 2.23.1 and the services/ Kafka broker, with a Java program compiled here:

- the broker restarted while the application logs: every logging call that returned has its event in the
  topic, none failed, and the idempotent producer wrote none twice;
- no broker at all: with the recipe's ``ignoreExceptions="false"`` each logging call throws, while Log4j's
  default (``true``) returns as if the event had been sent.
"""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from services import log4j_kafka
from tests.support import REPO, free_port, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

RECIPE = REPO / "configs" / "log4j2-kafka.xml"


def _run(classpath: str, config: Path, bootstrap: str, topic: str, events: int, threads: int,
         out: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, KAFKA_BOOTSTRAP_SERVERS=bootstrap, LOG_TOPIC=topic)
    with open(out, "wb") as fh:
        return subprocess.Popen(["java", "-cp", classpath, f"-Dlog4j2.configurationFile={config}", "LogOrders",
                                 str(events), str(threads), "100"], env=env, stdout=fh,
                                stderr=subprocess.STDOUT)


def _progress(out: Path) -> int:
    found = re.findall(r"^progress (\d+)$", out.read_text(errors="replace"), re.M)
    return max((int(n) for n in found), default=0)


def _topic_seqs(bootstrap: str, topic: str, expected: int) -> collections.Counter[int]:
    """How often each seq is in the topic (read from the start to its end)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        meta = consumer.list_topics(topic, timeout=30).topics[topic]
        parts = [TopicPartition(topic, p) for p in meta.partitions]
        ends = {tp.partition: consumer.get_watermark_offsets(tp, timeout=30)[1] for tp in parts}
        consumer.assign([TopicPartition(topic, p, 0) for p in ends])
        seqs: collections.Counter[int] = collections.Counter()
        done: dict[int, int] = dict.fromkeys(ends, -1)

        def drained() -> bool:
            for m in consumer.consume(1000, 0.5):
                assert m.error() is None, m.error()
                seqs[int(json.loads(m.value())["seq"])] += 1
                done[m.partition()] = m.offset()
            return all(done[p] >= end - 1 for p, end in ends.items())

        wait_until(drained, 60, interval=0, what=f"the topic read to its end ({expected} events expected)")
        return seqs
    finally:
        consumer.close()


def test_a_broker_restart_while_the_app_logs_loses_nothing_and_writes_nothing_twice(tmp_path, kafka):
    from confluent_kafka.admin import AdminClient, NewTopic

    events, topic = 20_000, f"java-restart-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    del admin
    classpath = log4j_kafka.log_orders_program(tmp_path / "java")
    out = tmp_path / "app.out"
    app = _run(classpath, RECIPE, kafka.bootstrap_servers, topic, events, 4, out)
    try:
        wait_until(lambda: _progress(out) >= 2_000 or app.poll() is not None, 120, interval=0.1,
                   what="the application logging")
        assert app.poll() is None, out.read_text()[-3000:]
        down = time.monotonic()
        kafka.stop()
        try:
            stalled = _progress(out)
            # the logging calls wait for the broker (syncSend) instead of returning or failing
            assert app.poll() is None
        finally:
            kafka.start()
            outage = time.monotonic() - down
        assert app.wait(240) == 0, out.read_text()[-3000:]
    finally:
        if app.poll() is None:
            app.kill()
            app.wait(10)
    text = out.read_text()
    print(f"broker down {outage:.1f} s after {stalled} logging calls returned; {text.strip().splitlines()[-1]}")
    assert f"logged {events} failed 0 in" in text, text[-3000:]
    assert stalled < events
    # the client saw the broker go (its WARN lines reach the console appender, not the Kafka one)
    assert re.search(r"WARN org\.apache\.kafka\.clients\.\S+ .*(disconnected|could not be established)", text), \
        text[-3000:]
    seqs = _topic_seqs(kafka.bootstrap_servers, topic, events)
    assert sorted(seqs) == list(range(events)), f"lost {events - len(seqs)}"
    assert set(seqs.values()) == {1}, collections.Counter(seqs.values())


def test_without_a_broker_each_logging_call_throws_instead_of_dropping_the_event(tmp_path):
    classpath = log4j_kafka.log_orders_program(tmp_path / "java")
    recipe = RECIPE.read_text()
    # the recipe as shipped, but giving up after 2 s instead of 60 s (max.block.ms) and 120 s
    shorter = recipe.replace('<Property name="delivery.timeout.ms">120000</Property>',
                             '<Property name="delivery.timeout.ms">2000</Property>'
                             '<Property name="request.timeout.ms">1000</Property>'
                             '<Property name="max.block.ms">2000</Property>')
    assert shorter != recipe
    shorter = shorter.replace('<Property name="timeout.ms">120000</Property>',
                              '<Property name="timeout.ms">2000</Property>')
    nobody = f"127.0.0.1:{free_port()}"
    results = {}
    for ignore in ("false", "true"):
        config = tmp_path / f"log4j2-ignore-{ignore}.xml"
        config.write_text(shorter.replace('ignoreExceptions="false"', f'ignoreExceptions="{ignore}"'))
        out = tmp_path / f"app-{ignore}.out"
        app = _run(classpath, config, nobody, "nowhere", 2, 2, out)
        assert app.wait(120) == 0, out.read_text()[-3000:]
        results[ignore] = out.read_text()
    # the recipe: both calls throw AppenderLoggingException, naming the appender
    assert "logged 0 failed 2 in" in results["false"], results["false"][-3000:]
    failures = re.findall(r"^failed (\d+) (\S+): (.*)$", results["false"], re.M)
    assert sorted(int(seq) for seq, _, _ in failures) == [0, 1]
    assert {cls for _, cls, _ in failures} == {"org.apache.logging.log4j.core.appender.AppenderLoggingException"}
    assert all("Unable to write to Kafka in appender [kafka]" in why for _, _, why in failures), failures
    # Log4j's default: the calls return as if the events were sent, and only the status logger says otherwise
    assert "logged 2 failed 0 in" in results["true"], results["true"][-3000:]
    assert "Unable to write to Kafka in appender [kafka]" in results["true"]
