"""The jars of Log4j 2's KafkaAppender for a Java application: log4j-core with its ``<Kafka>`` appender, the
JSON template layout and Kafka's producer client, for the recipe "Log4j 2 → Kafka → a Headrace worker on Kafka".

Not a server: ``python -m services fetch log4j-kafka`` collects them into ``.cache/services/log4j-kafka-lib``;
``classpath()`` returns them as a class path for ``javac``/``java``. The Log4j version is the one of the Flume
appender jars (``services.flume``), the Kafka client the broker's version (``services.kafka``).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

from services import maven
from services.base import Service, ServiceError
from services.flume import LOG4J_FLUME_VERSION, compile_java
from services.kafka import KAFKA_VERSION

__all__ = ["LOG4J_KAFKA_ARTIFACTS", "LOG4J_VERSION", "Log4jKafkaJars", "classpath", "log_orders_program"]

LOG4J_VERSION = LOG4J_FLUME_VERSION
LOG4J_KAFKA_ARTIFACTS: tuple[str, ...] = (
    f"org.apache.logging.log4j:log4j-api:{LOG4J_VERSION}",
    f"org.apache.logging.log4j:log4j-core:{LOG4J_VERSION}",
    # JsonTemplateLayout (EcsLayout.json): log4j-core's own JsonLayout needs Jackson and is deprecated; this one
    # jar has no dependencies beyond log4j-core
    f"org.apache.logging.log4j:log4j-layout-template-json:{LOG4J_VERSION}",
    f"org.apache.kafka:kafka-clients:{KAFKA_VERSION}",
    # the Kafka client logs through SLF4J: route it into Log4j (and keep it off the Kafka appender, see the
    # README's recipe); kafka-clients declares slf4j-api 1.7, which cannot see an SLF4J 2 provider
    f"org.apache.logging.log4j:log4j-slf4j2-impl:{LOG4J_VERSION}",
    "org.slf4j:slf4j-api:2.0.17",
)


def classpath() -> str:
    """The jars (fetched first when missing), as a class path."""
    lib = maven.fetch_artifacts(Log4jKafkaJars.name, LOG4J_KAFKA_ARTIFACTS)
    return ":".join(str(p) for p in sorted(lib.glob("*.jar")))


# Logs n events over the given threads, as an application's request threads would: event i carries the MDC
# (ThreadContext) fields orderId=order-<i % orders> and seq=<i>; every 1000th is an ERROR with an exception.
# A logging call that throws (the appender's ignoreExceptions=false) prints "failed <seq> <exception>" and the
# thread goes on. Prints "progress <calls returned>" every 500 calls and "logged <ok> failed <failed> in <s> s"
# at the end.
LOG_ORDERS = textwrap.dedent("""
    import java.util.*;
    import java.util.concurrent.atomic.AtomicInteger;
    import org.apache.logging.log4j.LogManager;
    import org.apache.logging.log4j.Logger;
    import org.apache.logging.log4j.ThreadContext;

    public class LogOrders {
        public static void main(String[] args) throws Exception {
            Logger log = LogManager.getLogger("shop.orders");
            int n = Integer.parseInt(args[0]);
            int threads = Integer.parseInt(args[1]);
            int orders = Integer.parseInt(args[2]);
            AtomicInteger ok = new AtomicInteger(), failed = new AtomicInteger();
            List<Thread> running = new ArrayList<>();
            long started = System.nanoTime();
            for (int t = 0; t < threads; t++) {
                int first = t;
                Thread th = new Thread(() -> {
                    for (int i = first; i < n; i += threads) {
                        ThreadContext.put("orderId", "order-" + (i % orders));
                        ThreadContext.put("seq", Integer.toString(i));
                        try {
                            if (i % 1000 == 0) {
                                log.error("order event " + i, new IllegalStateException("payment " + i));
                            } else {
                                log.info("order event {}", i);
                            }
                            if (ok.incrementAndGet() % 500 == 0) System.out.println("progress " + ok.get());
                        } catch (RuntimeException e) {
                            failed.incrementAndGet();
                            System.out.println("failed " + i + " " + e);
                        }
                    }
                    ThreadContext.clearMap();
                }, "request-" + t);
                th.start();
                running.add(th);
            }
            for (Thread th : running) th.join();
            double seconds = (System.nanoTime() - started) / 1e9;
            LogManager.shutdown();
            System.out.printf("logged %d failed %d in %.1f s%n", ok.get(), failed.get(), seconds);
        }
    }
""")


def log_orders_program(out_dir: Path) -> str:
    """Compile LogOrders against these jars; returns its class path (run ``java -cp <it>
    -Dlog4j2.configurationFile=<xml> LogOrders <events> <threads> <orders>``)."""
    return compile_java(LOG_ORDERS, "LogOrders", out_dir, classpath())


class Log4jKafkaJars(Service):
    """Fetch-only entry of ``python -m services``: there is nothing to start."""

    name = "log4j-kafka"

    def __init__(self, port: int | None = None, work_dir: str | None = None) -> None:
        raise ServiceError("log4j-kafka is a set of jars for a Java application, not a server: use 'fetch'")

    @classmethod
    def fetch(cls) -> None:
        maven.fetch_artifacts(cls.name, LOG4J_KAFKA_ARTIFACTS)

    def ports(self) -> Sequence[int]:
        return ()

    def command(self) -> list[str]:
        return []

    def ready(self) -> bool:
        return False
