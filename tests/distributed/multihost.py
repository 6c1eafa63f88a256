"""Simulated hosts on one machine: the broker and each worker in a Linux network namespace of its own.

Each host has its own address on a bridge in the root namespace (a veth pair per host; addresses from
198.18.0.0/15, RFC 2544's benchmarking range, only on interfaces of namespaces created and removed here),
so every worker listens on port 8083 as it would on a real machine, and a host is cut off from all the
others by taking its link down (no carrier, no route; the machine has no netem and no packet filter, so
partitions are whole-link cuts). The test client stays in the root namespace, at the bridge's address.
../shared/docs/multihost.md has the recipe this follows.

Workers start from ``configs/connect-distributed.properties`` with only the bootstrap servers, the
listener and paths changed (anything else a test changes is passed with a comment saying why), through
``ip netns exec``. Names carry a per-run id, so two runs at once do not collide; each run records itself
in ``/run/headrace-multihost`` before it creates anything, and every run first removes what a run that
died (killed, its pytest gone) left there. CI runs as root: where namespaces cannot be made, the fixture
fails with the reason, it never skips.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import re
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from connect.runtime.properties import load_config_file
from services.kafka import KafkaService
from tests.distributed.cluster import connect_distributed_command
from tests.support import REPO, CliProcess, wait_until, write_properties

__all__ = ["Host", "NamespaceError", "NamespacedKafka", "Network", "NamespacedWorker", "REST_PORT",
           "remove_leftovers"]

REST_PORT = 8083
KAFKA_PORT = 9092
RUNS = Path("/run/headrace-multihost")
_BENCHMARK_RANGE = ipaddress.ip_network("198.18.0.0/15")
_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "ftp_proxy")
_REBALANCE = re.compile(r"^\[([^\]]+)\] .*Rebalance done \(generation (\d+), leader \S+ at (\S+?)"
                        r"(, this worker is the leader)?\): this worker runs (\d+) connector\(s\) and (\d+) task",
                        re.MULTILINE)


class NamespaceError(RuntimeError):
    """A namespace, link or bridge could not be made (not root, no ``ip``, a kernel without netns)."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        result = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=False)
    except FileNotFoundError as exc:
        raise NamespaceError("the 'ip' command (iproute2) is not installed") from exc
    if check and result.returncode != 0:
        raise NamespaceError(f"'ip {' '.join(args)}' failed (exit {result.returncode}): "
                             f"{(result.stderr or result.stdout).strip()}")
    return result


def _process_start(pid: int) -> str | None:
    """The start time of ``pid`` (field 22 of /proc/<pid>/stat), None if it is gone: a pid with another
    start time is a later process that reused the number."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:].split()[19]


def _kill_namespace_processes(netns: str) -> None:
    # only processes inside a namespace this harness made: the brokers and workers its tests started
    listed = _ip("netns", "pids", netns, check=False)
    for pid in (int(p) for p in listed.stdout.split() if p.isdigit()):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _ip("netns", "pids", netns, check=False).stdout.strip():
        time.sleep(0.1)


def _remove(record: Mapping[str, Any]) -> None:
    for netns in record.get("namespaces", ()):
        _kill_namespace_processes(netns)
        _ip("netns", "del", netns, check=False)
    for link in [*record.get("links", ()), record.get("bridge")]:
        if link:
            _ip("link", "del", link, check=False)  # gone already once its namespace's end was removed


@contextlib.contextmanager
def _runs_locked() -> Iterator[None]:
    RUNS.mkdir(parents=True, exist_ok=True)
    with open(RUNS / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def remove_leftovers() -> list[str]:
    """Remove the namespaces, links and bridges of runs whose process is gone; their ids."""
    removed = []
    for path in sorted(RUNS.glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if _process_start(int(record.get("owner", 0))) == record.get("owner_start"):
            continue  # a run still going (another test session)
        _remove(record)
        path.unlink(missing_ok=True)
        removed.append(str(record.get("id")))
    return removed


class Host:
    """One simulated machine: a namespace whose ``eth0`` (``address``) is joined to the bridge by ``link``."""

    def __init__(self, name: str, netns: str, link: str, address: str) -> None:
        self.name, self.netns, self.link, self.address = name, netns, link, address

    def command(self, args: Sequence[str]) -> list[str]:
        """``args`` run inside this host, without the proxy settings of the test's environment."""
        unset = [f"-u{name}" for name in os.environ if name.lower() in _PROXY_VARIABLES]
        return ["ip", "netns", "exec", self.netns, "env", *unset, *args]

    def cut(self) -> None:
        """Take this host off the network: every connection to and from it stops, as a pulled cable."""
        _ip("link", "set", self.link, "down")

    def heal(self) -> None:
        _ip("link", "set", self.link, "up")

    def __repr__(self) -> str:
        return f"<Host {self.name} {self.address} ({self.netns})>"


class Network:
    """A bridge and one namespace per named host. ``close`` (also after a failure) kills what runs inside
    and removes it all."""

    def __init__(self, names: Sequence[str]) -> None:
        self.id = uuid.uuid4().hex[:5]
        self.bridge = f"hrb{self.id}"
        self.names = list(names)
        self.hosts: dict[str, Host] = {}
        self.client_address = ""
        self._record_path = RUNS / f"{self.id}.json"

    def __getitem__(self, name: str) -> Host:
        return self.hosts[name]

    def start(self) -> Network:
        with _runs_locked():
            remove_leftovers()
            subnet = self._free_subnet()
            addresses = list(subnet.hosts())
            self.client_address = str(addresses[-1])
            for index, name in enumerate(self.names):
                self.hosts[name] = Host(name, f"hr-{self.id}-{name}", f"hrv{self.id}{index}",
                                        str(addresses[index]))
            # recorded first, so that whatever follows is removed even if this process dies half-way
            self._record_path.write_text(json.dumps({
                "id": self.id, "owner": os.getpid(), "owner_start": _process_start(os.getpid()),
                "subnet": str(subnet), "bridge": self.bridge,
                "namespaces": [h.netns for h in self.hosts.values()],
                "links": [h.link for h in self.hosts.values()]}))
            try:
                _ip("link", "add", self.bridge, "type", "bridge")
                _ip("addr", "add", f"{self.client_address}/{subnet.prefixlen}", "dev", self.bridge)
                _ip("link", "set", self.bridge, "up")
                for host in self.hosts.values():
                    _ip("netns", "add", host.netns)
                    _ip("link", "add", host.link, "type", "veth", "peer", "name", "eth0", "netns", host.netns)
                    _ip("link", "set", host.link, "master", self.bridge)
                    _ip("link", "set", host.link, "up")
                    _ip("-n", host.netns, "addr", "add", f"{host.address}/{subnet.prefixlen}", "dev", "eth0")
                    _ip("-n", host.netns, "link", "set", "eth0", "up")
                    _ip("-n", host.netns, "link", "set", "lo", "up")
            except BaseException:
                self.close()
                raise
        return self

    def _free_subnet(self) -> ipaddress.IPv4Network:
        """A /24 of the benchmarking range that no interface of this machine has (other runs' bridges)."""
        used = {ipaddress.ip_interface(word).network for word in _ip("-o", "-4", "addr", "show").stdout.split()
                if re.fullmatch(r"198\.1[89]\.\d+\.\d+/\d+", word)}
        for subnet in _BENCHMARK_RANGE.subnets(new_prefix=24):
            if subnet.network_address.packed[2] == 0 or any(subnet.overlaps(u) for u in used):
                continue  # x.x.0.0/24 is left to people following the recipe by hand
            return subnet  # type: ignore[return-value]
        raise NamespaceError("every /24 of 198.18.0.0/15 is in use on this machine")

    def close(self) -> None:
        _remove({"namespaces": [h.netns for h in self.hosts.values()],
                 "links": [h.link for h in self.hosts.values()], "bridge": self.bridge})
        self._record_path.unlink(missing_ok=True)


class NamespacedKafka(KafkaService):
    """The project's single-node broker, run inside ``host``, listening and advertising on its address."""

    def __init__(self, host: Host, work_dir: Path) -> None:
        super().__init__(port=KAFKA_PORT, controller_port=KAFKA_PORT + 1, work_dir=work_dir, host=host.address)
        self.namespace_host = host

    def ports(self) -> Sequence[int]:
        # its ports are in a namespace of their own, which is new: nothing to wait for in the root namespace
        return ()

    def command(self) -> list[str]:
        return self.namespace_host.command(super().command())


def client(base_url: str, timeout: float = 30.0) -> httpx.Client:
    """An HTTP client of the root namespace (on the bridge), ignoring the environment's proxies."""
    return httpx.Client(base_url=base_url, timeout=timeout, trust_env=False)


class NamespacedWorker:
    """``connect-distributed`` on one host, from the shipped worker config."""

    def __init__(self, host: Host, root: Path, kafka: KafkaService, **changes: Any) -> None:
        """``changes``: worker settings beyond bootstrap servers, listener and paths, as ``**{"a.b": v}``;
        the call says why each is changed."""
        self.host = host
        self.dir = root / host.name
        self.dir.mkdir(parents=True, exist_ok=True)
        props = load_config_file(REPO / "configs" / "connect-distributed.properties")
        props.update({
            "bootstrap.servers": kafka.bootstrap_servers,
            "listeners": f"http://{host.address}:{REST_PORT}",
            "connector.allowed.paths": str(root),
        })
        props.update({k: str(v) for k, v in changes.items()})
        self.config_path = write_properties(self.dir / "worker.properties", props)
        self.proc: CliProcess | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host.address}:{REST_PORT}"

    @property
    def worker_id(self) -> str:
        return f"{self.host.address}:{REST_PORT}"

    def start(self) -> NamespacedWorker:
        command = self.host.command([*connect_distributed_command(), str(self.config_path)])
        self.proc = CliProcess(command, self.dir).start()
        return self

    def wait_ready(self, timeout: float = 90) -> None:
        proc = self.proc
        assert proc is not None

        def ready() -> bool:
            if not proc.alive():
                return True
            try:
                with client(self.url, 2) as http:
                    return http.get("/health").status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(ready, timeout, 0.3, what=f"REST of {self.worker_id}")
        assert proc.alive(), self.log()[-5000:]

    def http(self, timeout: float = 30.0) -> httpx.Client:
        return client(self.url, timeout)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.alive()

    def stop(self) -> None:
        if self.alive():
            assert self.proc is not None
            self.proc.terminate(40)

    def kill9(self) -> None:
        """SIGKILL, as a crash or a pulled plug: nothing of the worker's own stop runs."""
        if self.alive():
            assert self.proc is not None
            self.proc.kill9()

    def restart(self) -> NamespacedWorker:
        """Start it again (after ``stop`` or ``kill9``) from the same config; its log goes on in the same file."""
        assert not self.alive(), f"{self.worker_id} is still running"
        return self.start()

    def log(self) -> str:
        return self.proc.log() if self.proc is not None else ""

    def rebalances(self) -> list[tuple[datetime, int, bool, int]]:
        """(when, generation, this worker led it, tasks it runs) of each rebalance it completed, from its log."""
        return [(_log_time(m.group(1)), int(m.group(2)), bool(m.group(4)), int(m.group(6)))
                for m in _REBALANCE.finditer(self.log())]

    def is_leader(self) -> bool:
        done = self.rebalances()
        return bool(done) and done[-1][2]

    def log_lines(self, text: str) -> list[tuple[datetime, str]]:
        """(when, line) of the log lines containing ``text``."""
        out = []
        for line in self.log().splitlines():
            if text in line and line.startswith("["):
                out.append((_log_time(line[1:line.index("]")]), line))
        return out


def _log_time(stamp: str) -> datetime:
    # connect/logging_setup.py: logging's default asctime, "2025-01-31 12:00:00,123"
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f")


def status(worker: NamespacedWorker, name: str) -> dict[str, Any] | None:
    try:
        with worker.http(10) as http:
            r = http.get(f"/connectors/{name}/status")
    except httpx.HTTPError:
        return None
    return r.json() if r.status_code == 200 else None
