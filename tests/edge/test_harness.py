"""The edge harness's own measures: the process tree and its resident set, read from /proc."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.edge.harness import process_tree, rss_bytes_of, shipped_config


def test_the_tree_holds_a_child_and_its_memory_counts_toward_the_parent() -> None:
    # The child holds 64 MiB it has touched, so the tree's resident set grows by about that much.
    script = "import time; b = bytearray(64 << 20); b[::4096] = b'x' * len(b[::4096]); print('ready', flush=True); time.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == b"ready"
        assert child.pid in process_tree(os.getpid())
        assert rss_bytes_of(child.pid) >= 64 << 20
        assert rss_bytes_of(os.getpid()) >= rss_bytes_of(child.pid)
    finally:
        child.kill()
        child.wait()
    assert child.pid not in process_tree(os.getpid())


def test_the_shipped_worker_config_changes_only_what_is_asked() -> None:
    props = shipped_config("connect-standalone.properties", listeners="http://127.0.0.1:1")
    assert props["listeners"] == "http://127.0.0.1:1"
    assert props["connector.allowed.paths"] == "."
    # a connector's own keys, ``name`` included, are changes like any other
    assert shipped_config("connect-http-source.properties", name="logs")["name"] == "logs"
