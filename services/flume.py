"""Apache Flume 1.11.0 from Maven Central: a real Flume agent, and the jars of Flume's own client and of
Log4j 2's FlumeAppender, for the Flume compatibility tests and benchmark.

``FlumeAgentService`` runs ``org.apache.flume.node.Application`` on an agent properties file (the caller's
text, with ``{port}`` standing for the port of the agent's Avro source, when it has one). ``flume_sender``
compiles ``FlumeSend``, a small Java program that sends numbered events with headers through Flume's
``RpcClientFactory`` and prints what was acknowledged.
"""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from services import maven
from services.base import Service, ServiceError, free_port, port_is_open
from services.kafka import java_executable

__all__ = ["FLUME_VERSION", "FlumeAgentService", "FlumeJars", "classpath", "compile_java", "flume_sender"]

FLUME_VERSION = "1.11.0"
LOG4J_FLUME_VERSION = "2.23.1"  # the last Log4j 2 release with log4j-flume-ng (it left for its own cycle in 3.0)

CLIENT_ARTIFACTS = [f"org.apache.flume:flume-ng-sdk:{FLUME_VERSION}", "org.slf4j:slf4j-simple:1.7.36"]
AGENT_ARTIFACTS = [
    f"org.apache.flume:flume-ng-node:{FLUME_VERSION}",
    f"org.apache.flume.flume-ng-channels:flume-file-channel:{FLUME_VERSION}",
    "org.slf4j:slf4j-simple:1.7.32",
]
LOG4J_FLUME_ARTIFACTS = [
    f"org.apache.logging.log4j:log4j-flume-ng:{LOG4J_FLUME_VERSION}",
    f"org.apache.logging.log4j:log4j-core:{LOG4J_FLUME_VERSION}",
]
JAR_SETS = {"flume-client": CLIENT_ARTIFACTS, "flume-agent": AGENT_ARTIFACTS, "log4j-flume": LOG4J_FLUME_ARTIFACTS}


def classpath(name: str) -> str:
    """The jars of one of ``JAR_SETS`` (fetched first when missing), as a class path."""
    lib = maven.fetch_artifacts(name, JAR_SETS[name])
    return ":".join(str(p) for p in sorted(lib.glob("*.jar")))


def compile_java(source: str, class_name: str, out_dir: Path, cp: str) -> str:
    """Compile one class into ``out_dir``; returns the class path to run it with."""
    javac = shutil.which("javac")
    if javac is None:
        raise ServiceError("javac is not installed (need a Java 17 JDK)")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{class_name}.java").write_text(source)
    done = subprocess.run([javac, "-nowarn", "-cp", cp, "-d", str(out_dir), str(out_dir / f"{class_name}.java")],
                          capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        raise ServiceError(f"javac failed on {class_name}:\n{done.stderr[-3000:]}")
    return f"{cp}:{out_dir}"


# Sends events numbered from..to with headers seq, app and (every 7th) a multi-byte header value; batches go
# through appendBatch, size 1 through append. "retry" rebuilds the client after a failure and resends the
# same batch. Prints "acked <from> <to>" after each acknowledged call, "failed <from> <reason>" after each
# failure, and "rate <events/s>" at the end.
FLUME_SEND = textwrap.dedent("""
    import java.nio.charset.StandardCharsets;
    import java.util.*;
    import org.apache.flume.Event;
    import org.apache.flume.EventDeliveryException;
    import org.apache.flume.api.RpcClient;
    import org.apache.flume.api.RpcClientFactory;
    import org.apache.flume.event.EventBuilder;

    public class FlumeSend {
        static RpcClient client(String host, int port, int batch, String compression) {
            if (compression.equals("none")) {
                return RpcClientFactory.getDefaultInstance(host, port, batch);
            }
            Properties p = new Properties();
            p.setProperty("hosts", "h1");
            p.setProperty("hosts.h1", host + ":" + port);
            p.setProperty("batch-size", Integer.toString(batch));
            p.setProperty("compression-type", compression);
            p.setProperty("compression-level", "6");
            return RpcClientFactory.getInstance(p);
        }

        public static void main(String[] a) {
            try {
                run(a);
            } catch (Throwable e) {
                e.printStackTrace();
                System.exit(1);  // Netty's threads would keep the JVM alive
            }
            System.exit(0);
        }

        static void run(String[] a) throws Exception {
            String host = a[0];
            int port = Integer.parseInt(a[1]);
            int from = Integer.parseInt(a[2]);
            int to = Integer.parseInt(a[3]);
            int batch = Integer.parseInt(a[4]);
            String compression = a[5];
            int threads = Integer.parseInt(a[6]);
            boolean retry = a.length > 7 && a[7].equals("retry");
            long started = System.nanoTime();
            List<Thread> running = new ArrayList<>();
            List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
            int share = (to - from + threads - 1) / threads;
            for (int t = 0; t < threads; t++) {
                int lo = from + t * share, hi = Math.min(to, lo + share);
                Thread th = new Thread(() -> {
                    try {
                        send(host, port, lo, hi, batch, compression, retry);
                    } catch (Throwable e) {
                        errors.add(e);
                    }
                });
                th.start();
                running.add(th);
            }
            for (Thread th : running) th.join();
            if (!errors.isEmpty()) throw new RuntimeException(errors.get(0));
            double seconds = (System.nanoTime() - started) / 1e9;
            System.out.println("rate " + (long) ((to - from) / seconds));
        }

        static void send(String host, int port, int from, int to, int batch, String compression, boolean retry)
                throws Exception {
            RpcClient c = null;
            int i = from;
            while (i < to) {
                int m = Math.min(batch, to - i);
                List<Event> events = new ArrayList<>(m);
                for (int j = i; j < i + m; j++) {
                    Map<String, String> h = new HashMap<>();
                    h.put("seq", Integer.toString(j));
                    h.put("app", "shop");
                    if (j % 7 == 0) h.put("city", "Z\\u00fcrich \\u6771\\u4eac");
                    events.add(EventBuilder.withBody(("event " + j).getBytes(StandardCharsets.UTF_8), h));
                }
                try {
                    if (c == null) c = client(host, port, batch, compression);
                    if (m == 1) c.append(events.get(0)); else c.appendBatch(events);
                    System.out.println("acked " + i + " " + (i + m));
                    i += m;
                } catch (Exception e) {
                    if (!retry) throw e;
                    String why = String.valueOf(e.getMessage());
                    System.out.println("failed " + i + " " + why.replace('\\n', ' '));
                    if (c != null) c.close();
                    c = null;
                    Thread.sleep(100);
                }
            }
            if (c != null) c.close();
        }
    }
""")


def flume_sender(out_dir: Path) -> str:
    """Compile FlumeSend; returns its class path (run ``java -cp <it> FlumeSend host port from to batch
    none|deflate threads [retry]``)."""
    return compile_java(FLUME_SEND, "FlumeSend", out_dir, classpath("flume-client"))


class FlumeJars(Service):
    """Flume's client, agent and Log4j 2's FlumeAppender jars: ``fetch`` gets them, nothing starts."""

    name = "flume"

    def __init__(self, port: int | None = None, work_dir: str | None = None) -> None:
        super().__init__(work_dir)

    @classmethod
    def fetch(cls) -> None:
        for name, artifacts in JAR_SETS.items():
            maven.fetch_artifacts(name, artifacts)

    def ports(self) -> Sequence[int]:
        return []

    def command(self) -> list[str]:
        raise ServiceError("'flume' is jars only: the tests start FlumeAgentService with their own agent config")

    def ready(self) -> bool:
        return True


class FlumeAgentService(Service):
    """One real Flume agent (``flume-ng-node``, the file channel included) running ``config``."""

    name = "flume-agent"
    startup_timeout = 90.0

    def __init__(self, config: str = "", agent: str = "a1", port: int | None = None,
                 work_dir: str | None = None, heap: str = "512m") -> None:
        super().__init__(work_dir)
        self.port = port or free_port()
        self.agent = agent
        self.heap = heap
        self._listens = "{port}" in config
        self.config_text = config.replace("{port}", str(self.port)).replace("{dir}", str(self.work_dir))

    @classmethod
    def fetch(cls) -> None:
        maven.fetch_artifacts(cls.name, AGENT_ARTIFACTS)

    def ports(self) -> Sequence[int]:
        return [self.port] if self._listens else []

    def prepare(self) -> None:
        (self.work_dir / "agent.properties").write_text(self.config_text)

    def command(self) -> list[str]:
        cp = ":".join(str(p) for p in sorted(maven.lib_dir(self.name).glob("*.jar")))
        return [java_executable(), f"-Xmx{self.heap}", "-cp", cp, "org.apache.flume.node.Application",
                "-f", str(self.work_dir / "agent.properties"), "-n", self.agent]

    def ready(self) -> bool:
        if self.ports():
            return port_is_open(self.port)
        return "started" in self.log_path.read_text(errors="replace").lower()

    def describe(self) -> dict[str, Any]:
        return {"port": self.port, "config": str(self.work_dir / "agent.properties")}
