"""What a worker's process tree uses, read from /proc: shared by the benchmarks that spawn workers."""

from __future__ import annotations

import os
from pathlib import Path


def tree(pid: int) -> list[int]:
    """``pid`` and its live descendants (the REST front process, anything a task started)."""
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                todo.extend(int(c) for c in Path(f"/proc/{p}/task/{task}/children").read_text().split())
        except (OSError, ValueError):
            pass
    return pids


class TreeUsage:
    """CPU seconds and peak RSS of a process and its descendants, the last figure seen kept for each pid
    (so that a child that exits still counts)."""

    TICK = os.sysconf("SC_CLK_TCK")

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.cpu: dict[int, float] = {}
        self.hwm_kb: dict[int, int] = {}

    def sample(self) -> float:
        """Reads every process of the tree now; the CPU seconds (user + system) of all seen so far."""
        for p in tree(self.pid):
            try:
                fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
                self.cpu[p] = (int(fields[11]) + int(fields[12])) / self.TICK
                for line in Path(f"/proc/{p}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        self.hwm_kb[p] = int(line.split()[1])
            except (OSError, IndexError, ValueError):
                pass
        return sum(self.cpu.values())

    def pss_mb(self) -> float:
        """The tree's proportional set size now, in MiB (/proc/<pid>/smaps_rollup): each page shared by k
        processes counts 1/k in each, so the sum is the memory the tree holds, a forked child's shared pages
        once. A point in time: callers sample it for a peak."""
        total_kb = 0
        for p in tree(self.pid):
            try:
                for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                    if line.startswith("Pss:"):
                        total_kb += int(line.split()[1])
                        break
            except (OSError, IndexError, ValueError):
                pass
        return total_kb / 1024

    @property
    def peak_rss_mb(self) -> float:
        """The sum of each process's peak resident set (VmHWM), in MiB: pages a forked child shares count twice."""
        return sum(self.hwm_kb.values()) / 1024


def machine_cpu_seconds() -> float:
    """CPU seconds every core of the machine has spent busy since boot (/proc/stat: user, nice, system, irq,
    softirq, steal): beside a tree's figure, what else the cores did (the kernel writing files back, the
    benchmark itself, other processes)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / TreeUsage.TICK
