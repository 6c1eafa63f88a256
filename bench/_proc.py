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

    @property
    def peak_rss_mb(self) -> float:
        """The sum of each process's peak resident set (VmHWM), in MiB: pages a forked child shares count twice."""
        return sum(self.hwm_kb.values()) / 1024
