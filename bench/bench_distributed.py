"""Rebalance and failover times of a three-worker distributed cluster: on one host, and across simulated hosts.

One run starts two clusters of three ``connect-distributed`` workers from the shipped
``configs/connect-distributed.properties`` (only bootstrap servers, listener, paths, group and topic names
changed, plus ``scheduled.rebalance.max.delay.ms``, see ``--delay-ms``), one after the other:
  (a) single host: a broker and the workers on 127.0.0.1, each worker on a port of its own;
  (b) namespaces (tests/distributed/multihost.py): the broker and each worker in a Linux network namespace of
      its own, every worker listening on port 8083, the client on the bridge. Needs root.

Each cluster runs a FileStreamSource (1 task) fed 100 lines/s and a 6-task FileStreamSink on a 6-partition
topic, and the bench measures:
  1. first rebalance: the three processes spawned -> all three members of one generation;
  2. connector added: POST of the 6-task sink -> its connector and 6 tasks RUNNING;
  3. REST writes: p50 of PUTs sent to the leader and sent to a follower, which forwards them;
  4. kill -9 of a worker (a follower, the one running the source task if one does) -> its connector and tasks
     RUNNING on the others, and -> data flowing again: the sink file holds every line the feed had written
     by the time the tasks were RUNNING elsewhere (so every partition and the source deliver again);
  5. (b only) the same worker restarted, then a worker's link cut for ``--cut-s`` (at most 60 s) ->
     RUNNING elsewhere and data flowing again, and heal -> the cut worker rejoined and runs tasks again.
Failovers are compared with the target session.timeout.ms + scheduled.rebalance.max.delay.ms + 5 s.

    python bench/bench_distributed.py    # as root; 9 minutes on 2 loaded cores
    python bench/bench_distributed.py --hosts single --worker consumer.session.timeout.ms=10000
"""

from __future__ import annotations

import argparse
import datetime
import functools
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from connect.log import open_log_backend
from connect.log.api import NewTopic
from connect.runtime.properties import load_config_file
from connect.runtime.worker_config import DistributedConfig
from services.kafka import KafkaService
from tests.distributed.faults import LineFeed, cluster_names, seconds, settled
from tests.distributed.multihost import (
    Host,
    NamespacedKafka,
    NamespacedWorker,
    NamespaceError,
    Network,
    client,
    status,
)
from tests.support import REPO, free_port

SOURCE, SINK = "lines-in", "lines-out"
WORKERS = ("w1", "w2", "w3")


class LoopbackHost(Host):
    """The machine itself: commands run in the root namespace, the address is loopback, nothing to cut."""

    def __init__(self, name: str) -> None:
        super().__init__(name, netns="", link="", address="127.0.0.1")

    def command(self, args: Sequence[str]) -> list[str]:
        # the namespaced workers run without the environment's proxies; so do these, for the same comparison
        unset = [f"-u{n}" for n in os.environ if n.lower() in ("http_proxy", "https_proxy", "all_proxy",
                                                               "no_proxy", "ftp_proxy")]
        return ["env", *unset, *args]

    def cut(self) -> None:
        raise NotImplementedError("one host has no link to cut")

    heal = cut


class LoopbackWorker(NamespacedWorker):
    """A worker of the single-host cluster: the shipped config, listening on 127.0.0.1 and a free port."""

    def __init__(self, name: str, root: Path, kafka: KafkaService, **changes: Any) -> None:
        self.port = free_port()
        super().__init__(LoopbackHost(name), root, kafka, listeners=f"http://127.0.0.1:{self.port}", **changes)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def worker_id(self) -> str:
        return f"127.0.0.1:{self.port}"


class SinkWatch:
    """What the sink file holds so far, read incrementally: the feed's line numbers seen, and ``complete``,
    the count of leading lines (``line-0`` .. ``line-<complete - 1>``) all present."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen: set[int] = set()
        self.lines = 0
        self.complete = 0
        self._offset = 0
        self._partial = b""

    def refresh(self) -> int:
        if self.path.exists():
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                chunk = f.read()
            self._offset += len(chunk)
            *whole, self._partial = (self._partial + chunk).split(b"\n")
            for line in whole:
                if line.startswith(b"line-"):
                    self.seen.add(int(line[5:]))
                    self.lines += 1
            while self.complete in self.seen:
                self.complete += 1
        return self.complete


def _until(predicate: Callable[[], Any], timeout: float, interval: float = 0.2) -> Any:
    """``predicate``'s first true value within ``timeout`` seconds, else None (a figure not reached)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return None


def _must(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.2) -> Any:
    value = _until(predicate, timeout, interval)
    if not value:
        raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}")
    return value


def _placement(body: dict[str, Any] | None, count: int) -> list[str] | None:
    """Worker ids of the connector and its ``count`` tasks when all are RUNNING, else None."""
    if not body or body["connector"]["state"] != "RUNNING" or len(body["tasks"]) != count:
        return None
    if any(t["state"] != "RUNNING" for t in body["tasks"]):
        return None
    return [body["connector"]["worker_id"], *(t["worker_id"] for t in body["tasks"])]


@dataclass
class Figures:
    """Seconds per measure of one cluster; None: not reached within the bench's wait."""

    first_rebalance: float | None = None
    added: float | None = None
    write_leader_ms: float | None = None
    write_follower_ms: float | None = None
    kill_moved: float | None = None
    kill_flowing: float | None = None
    cut_moved: float | None = None
    cut_flowing: float | None = None
    cut_stopped: float | None = None
    heal_rejoined: float | None = None
    notes: list[str] = field(default_factory=list)


class Bench:
    def __init__(self, label: str, workers: list[NamespacedWorker], bootstrap: str, root: Path, args: argparse.Namespace
                 ) -> None:
        self.label, self.workers, self.bootstrap, self.root, self.args = label, workers, bootstrap, root, args
        self.figures = Figures()
        self.sink_file = root / "out.txt"
        self.watch = SinkWatch(self.sink_file)
        self.feed: LineFeed | None = None
        self.delay_s = args.delay_ms / 1000

    def say(self, text: str) -> None:
        print(f"[{self.label}] {text}", flush=True)

    def leader(self) -> NamespacedWorker:
        return _must(lambda: next((w for w in self.workers if w.alive() and w.is_leader()), None), 90, "a leader")

    def start(self) -> None:
        spawned = time.monotonic()
        for w in self.workers:
            w.start()
        for w in self.workers:
            w.wait_ready(120)

        def one_generation() -> datetime.datetime | None:
            done = [{generation: when for when, generation, _, _ in w.rebalances()} for w in self.workers]
            common = set(done[0]).intersection(*done[1:])
            return max(d[min(common)] for d in done) if common else None

        at = _must(one_generation, 120, "the three workers in one generation")
        self.figures.first_rebalance = seconds(spawned, at)
        herders = [w.log_lines("Distributed herder started") for w in self.workers]
        last_herder = max(lines[0][0] for lines in herders if lines)
        self.say(f"first rebalance with all three: {self.figures.first_rebalance:.2f} s after the processes were "
                 f"spawned, {(at - last_herder).total_seconds():.2f} s after the last herder started")

    def add_connectors(self) -> None:
        topic = f"bench-lines-{uuid.uuid4().hex[:8]}"
        backend = open_log_backend({"bootstrap.servers": self.bootstrap})
        admin = backend.admin()
        admin.create_topic(NewTopic(topic, self.args.sink_tasks, 1))
        admin.close()
        backend.close()
        source_file = self.root / "in.txt"
        source_file.touch()
        leader = self.leader()
        with leader.http(60) as http:
            r = http.post("/connectors", json={"name": SOURCE, "config": {
                "connector.class": "FileStreamSource", "tasks.max": "1", "file": str(source_file), "topic": topic}})
            assert r.status_code == 201, r.text
        _must(lambda: _placement(status(leader, SOURCE), 1), 120, f"{SOURCE} RUNNING")
        self.feed = LineFeed(source_file, rate=self.args.rate).start()
        # the group at rest before the measured rebalance, so that it is the connector's alone
        _must(lambda: settled(self.workers, 3.0), 120, "a group at rest", 0.5)
        with leader.http(60) as http:
            t0 = time.monotonic()
            r = http.post("/connectors", json={"name": SINK, "config": {
                "connector.class": "FileStreamSink", "tasks.max": str(self.args.sink_tasks), "topics": topic,
                "file": str(self.sink_file)}})
            assert r.status_code == 201, r.text
        _must(lambda: _placement(status(leader, SINK), self.args.sink_tasks), 120, f"{SINK} RUNNING", 0.1)
        self.figures.added = time.monotonic() - t0
        self.say(f"{SINK} added: connector and {self.args.sink_tasks} tasks RUNNING {self.figures.added:.2f} s "
                 f"after the POST")
        _must(lambda: self.watch.refresh() > self.args.rate, 120, "lines through source, topic and sink")

    def writes(self) -> None:
        leader = self.leader()
        follower = next(w for w in self.workers if w is not leader)
        direct = _latencies(leader, self.args.writes, self.root, "lat-direct")
        forwarded = _latencies(follower, self.args.writes, self.root, "lat-forwarded")
        self.figures.write_leader_ms = statistics.median(direct) * 1000
        self.figures.write_follower_ms = statistics.median(forwarded) * 1000
        self.say(f"{self.args.writes} PUTs: p50 {self.figures.write_leader_ms:.1f} ms to the leader, "
                 f"{self.figures.write_follower_ms:.1f} ms through a follower")

    def victim(self) -> NamespacedWorker:
        """A follower, the one running the source task if one does (its loss stops the data), else the busier."""
        _must(lambda: settled(self.workers, self.delay_s + 3.0), 180, "a group at rest", 0.5)
        leader = self.leader()
        owners: dict[str, list[str]] = {}

        def placed(name: str, count: int) -> dict[str, Any] | None:
            body = status(leader, name)
            return body if _placement(body, count) else None

        for name, count in ((SOURCE, 1), (SINK, self.args.sink_tasks)):
            body = _must(functools.partial(placed, name, count), 60, f"{name} RUNNING")
            owners.setdefault(body["connector"]["worker_id"], []).append(name)
            for t in body["tasks"]:
                owners.setdefault(t["worker_id"], []).append(f"{name}-{t['id']}")
        followers = [w for w in self.workers if w is not leader]
        chosen = max(followers, key=lambda w: (f"{SOURCE}-0" in owners.get(w.worker_id, []),
                                               len(owners.get(w.worker_id, []))))
        self.say(f"victim {chosen.worker_id} runs {sorted(owners.get(chosen.worker_id, []))}; "
                 f"leader {leader.worker_id}")
        return chosen

    def _moved_off(self, victim: NamespacedWorker, others: list[NamespacedWorker]) -> bool:
        for name, count in ((SOURCE, 1), (SINK, self.args.sink_tasks)):
            where = _placement(status(others[0], name), count)
            if where is None or victim.worker_id in where:
                return False
        return True

    def failover(self, victim: NamespacedWorker, fault_at: float, limit: float) -> tuple[float | None, float | None]:
        """(fault -> victim's work RUNNING on the others, fault -> data flowing again), each None if not
        within ``limit`` seconds of the fault."""
        others = [w for w in self.workers if w is not victim and w.alive()]
        left = limit - (time.monotonic() - fault_at)
        if not _until(lambda: self._moved_off(victim, others), left, 0.2):
            return None, None
        moved = time.monotonic() - fault_at
        assert self.feed is not None
        target_line = self.feed.written
        left = limit - (time.monotonic() - fault_at)
        if not _until(lambda: self.watch.refresh() >= target_line, left, 0.1):
            return moved, None
        return moved, time.monotonic() - fault_at

    def kill(self) -> NamespacedWorker:
        victim = self.victim()
        assert victim.proc is not None
        fault_at = time.monotonic()
        victim.proc.kill9()
        self.figures.kill_moved, self.figures.kill_flowing = self.failover(victim, fault_at, self.args.wait_s)
        self.say(f"kill -9: RUNNING elsewhere {_fmt(self.figures.kill_moved)}, data flowing "
                 f"{_fmt(self.figures.kill_flowing)}")
        return victim

    def restart(self, worker: NamespacedWorker) -> None:
        restarted = time.monotonic()
        worker.start()
        worker.wait_ready(120)
        _must(lambda: any(tasks and seconds(restarted, when) > 0 for when, _, _, tasks in worker.rebalances()),
              180, f"work on the restarted {worker.worker_id}", 0.3)
        self.say(f"{worker.worker_id} restarted and runs tasks again")

    def cut(self) -> None:
        victim = self.victim()
        cut_at = time.monotonic()
        victim.host.cut()
        try:
            self.figures.cut_moved, self.figures.cut_flowing = self.failover(victim, cut_at, self.args.cut_s)
            time.sleep(max(0.0, self.args.cut_s - (time.monotonic() - cut_at)))
        finally:
            victim.host.heal()
        healed_at = time.monotonic()
        lost = [when for when, _ in victim.log_lines("not a member of the group any more")
                if seconds(cut_at, when) > 0]
        self.figures.cut_stopped = seconds(cut_at, lost[0]) if lost else None

        def rejoined() -> datetime.datetime | None:
            return next((when for when, _, _, tasks in victim.rebalances()
                         if tasks and seconds(healed_at, when) > 0), None)

        at = _until(rejoined, self.args.wait_s, 0.3)
        self.figures.heal_rejoined = seconds(healed_at, at) if at else None
        self.say(f"{self.args.cut_s:.0f} s cut of {victim.worker_id}: RUNNING elsewhere "
                 f"{_fmt(self.figures.cut_moved)}, data flowing {_fmt(self.figures.cut_flowing)}, the cut worker "
                 f"stopped its work {_fmt(self.figures.cut_stopped)}; heal -> rejoined "
                 f"{_fmt(self.figures.heal_rejoined)}")

    def finish(self) -> None:
        """Every line the feed wrote reaches the sink: the count said beside the figures."""
        if self.feed is None:
            return
        written = self.feed.stop()
        complete = _until(lambda: self.watch.refresh() >= written, 120, 0.5)
        distinct = len(self.watch.seen)
        note = (f"lines written {written}, in the sink {self.watch.lines}, distinct {distinct}, "
                f"duplicates {self.watch.lines - distinct}")
        if not complete:
            note += f"; MISSING {written - len(self.watch.seen & set(range(written)))}"
        self.figures.notes.append(note)
        self.say(note)

    def stop(self) -> None:
        if self.feed is not None:
            self.feed.stop()
        for w in self.workers:
            if not isinstance(w.host, LoopbackHost):
                w.host.heal()
            w.stop()


def _latencies(worker: NamespacedWorker, writes: int, root: Path, name: str) -> list[float]:
    out = []
    with client(worker.url, 60) as http:
        for i in range(writes):
            body = {"connector.class": "FileStreamSource", "tasks.max": "1", "topic": f"{name}-t",
                    "file": str(root / "idle.txt"), "batch.size": str(i + 1)}
            t0 = time.perf_counter()
            r = http.put(f"/connectors/{name}/config", json=body)
            out.append(time.perf_counter() - t0)
            if r.status_code not in (200, 201):
                raise SystemExit(f"write to {worker.worker_id} failed: {r.status_code} {r.text}")
    return out


def _fmt(value: float | None, unit: str = "s") -> str:
    return "-" if value is None else f"{value:.1f} {unit}"


def _changes(args: argparse.Namespace) -> dict[str, Any]:
    # the shipped 5 min (Kafka Connect's default) would keep a killed or cut worker's work waiting for it
    # for 5 min: longer than the 60 s cut, whose work would never move
    return {**cluster_names(), "scheduled.rebalance.max.delay.ms": args.delay_ms, **dict(args.worker)}


def _remove_or_keep(root: Path, keep: bool) -> None:
    """The run's files go, unless asked for or the run is failing: then its workers' logs explain it."""
    if sys.exc_info()[0] is None and not keep:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print(f"the workers' and broker's logs are kept in {root}", file=sys.stderr)


def run_single_host(args: argparse.Namespace) -> Figures:
    root = Path(tempfile.mkdtemp(prefix="bench-distributed-1host-"))
    (root / "idle.txt").write_text("")
    kafka = KafkaService(work_dir=root / "kafka")
    bench: Bench | None = None
    try:
        kafka.start()
        changes = _changes(args)
        workers: list[NamespacedWorker] = [LoopbackWorker(h, root, kafka, **changes) for h in WORKERS]
        bench = Bench("single host", workers, kafka.bootstrap_servers, root, args)
        bench.start()
        bench.add_connectors()
        bench.writes()
        bench.kill()
        bench.finish()
        return bench.figures
    finally:
        if bench is not None:
            bench.stop()
        kafka.cleanup()
        _remove_or_keep(root, args.keep)


def run_namespaces(args: argparse.Namespace) -> Figures:
    root = Path(tempfile.mkdtemp(prefix="bench-distributed-netns-"))
    (root / "idle.txt").write_text("")
    network = Network(("kafka", *WORKERS))
    try:
        network.start()
    except NamespaceError as exc:
        raise SystemExit(f"the namespace harness could not be made: {exc}") from exc
    kafka = NamespacedKafka(network["kafka"], root / "kafka")
    bench: Bench | None = None
    try:
        kafka.start()
        changes = _changes(args)
        workers = [NamespacedWorker(network[h], root, kafka, **changes) for h in WORKERS]
        bench = Bench("namespaces", workers, kafka.bootstrap_servers, root, args)
        bench.start()
        bench.add_connectors()
        bench.writes()
        killed = bench.kill()
        bench.restart(killed)
        bench.cut()
        bench.finish()
        return bench.figures
    finally:
        if bench is not None:
            bench.stop()
        network["kafka"].heal()
        kafka.cleanup()
        network.close()
        _remove_or_keep(root, args.keep)


def table(one: Figures | None, many: Figures | None, target_s: float) -> str:
    """Both columns and the target; a column not run is empty, a failover not reached in time is ``none``."""

    def cell(figures: Figures | None, name: str, unit: str = "s") -> str:
        if figures is None:
            return ""
        value = getattr(figures, name)
        return "none" if value is None else f"{value:.1f} {unit}"

    def met(figures: Figures | None, name: str) -> str:
        if figures is None:
            return "-"
        value = getattr(figures, name)
        return "met" if value is not None and value <= target_s else "MISSED"

    both = (one, many)
    rows: list[tuple[str, ...]] = [
        ("first rebalance (spawn -> 3 in one generation)", *(cell(f, "first_rebalance") for f in both), ""),
        ("connector added -> its tasks RUNNING", *(cell(f, "added") for f in both), ""),
        ("PUT p50 to the leader", *(cell(f, "write_leader_ms", "ms") for f in both), ""),
        ("PUT p50 through a follower", *(cell(f, "write_follower_ms", "ms") for f in both), ""),
        ("kill -9 -> tasks RUNNING elsewhere", *(cell(f, "kill_moved") for f in both), ""),
        ("kill -9 -> data flowing again", *(cell(f, "kill_flowing") for f in both),
         f"{met(one, 'kill_flowing')} / {met(many, 'kill_flowing')}"),
        ("cut -> tasks RUNNING elsewhere", "", cell(many, "cut_moved"), ""),
        ("cut -> data flowing again", "", cell(many, "cut_flowing"), met(many, "cut_flowing")),
        ("cut -> the cut worker stopped its work", "", cell(many, "cut_stopped"), ""),
        ("heal -> rejoined, runs tasks", "", cell(many, "heal_rejoined"), ""),
    ]
    header = ("", "single host", "namespaces", f"target {target_s:.0f} s")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    return "\n".join(f"{r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:>{widths[2]}}  {r[3]}".rstrip()
                     for r in [header, *rows])


def _setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--delay-ms", type=int, default=5000,
                   help="scheduled.rebalance.max.delay.ms (the shipped config leaves Kafka Connect's 300000)")
    p.add_argument("--cut-s", type=float, default=60.0, help="how long the link stays down (at most 60 s)")
    p.add_argument("--rate", type=int, default=100, help="lines per second into the source file")
    p.add_argument("--sink-tasks", type=int, default=6, help="the sink's tasks.max and its topic's partitions")
    p.add_argument("--writes", type=int, default=100, help="PUTs to the leader and through a follower")
    p.add_argument("--wait-s", type=float, default=180.0, help="how long a failover may take before 'none'")
    p.add_argument("--hosts", choices=("both", "single", "namespaces"), default="both",
                   help="which clusters to run (the comparison needs both)")
    p.add_argument("--worker", type=_setting, action="append", default=[], metavar="KEY=VALUE",
                   help="another change to the shipped worker config, printed with the figures")
    p.add_argument("--keep", action="store_true", help="keep the workers' and brokers' logs")
    args = p.parse_args()
    if not 0 < args.cut_s <= 60:
        p.error("--cut-s must be in (0, 60]")
    if os.geteuid() != 0 and args.hosts != "single":
        raise SystemExit("bench_distributed.py needs root: the namespace harness creates network namespaces, "
                         "veth links and a bridge (ip netns add, ip link add); --hosts single runs without")
    shipped = DistributedConfig(load_config_file(REPO / "configs" / "connect-distributed.properties"))
    session_s = shipped.session_timeout_ms / 1000
    target_s = session_s + args.delay_ms / 1000 + 5
    started = datetime.datetime.now()
    extra = "".join(f"; {k}={v} (CHANGED)" for k, v in args.worker)
    print(f"{started:%Y-%m-%d %H:%M} three workers from configs/connect-distributed.properties "
          f"(session.timeout.ms {shipped.session_timeout_ms}, heartbeat.interval.ms {shipped.heartbeat_interval_ms},"
          f" offset.flush.interval.ms {shipped.offset_flush_interval_ms}); scheduled.rebalance.max.delay.ms "
          f"{args.delay_ms} (LOWERED from the shipped {shipped.scheduled_rebalance_max_delay_ms}){extra}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    one = run_single_host(args) if args.hosts in ("both", "single") else None
    many = run_namespaces(args) if args.hosts in ("both", "namespaces") else None
    print()
    print(table(one, many, target_s))
    print(f"target: session.timeout.ms {session_s:.0f} s + scheduled.rebalance.max.delay.ms "
          f"{args.delay_ms / 1000:.0f} s + 5 s; cut held {args.cut_s:.0f} s")
    for label, figures in (("single host", one), ("namespaces", many)):
        for note in figures.notes if figures is not None else ():
            print(f"{label}: {note}")
    print(f"took {(datetime.datetime.now() - started).total_seconds() / 60:.1f} min; "
          f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
