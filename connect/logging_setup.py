"""One log format for every Headrace process: one line per event, thread name included."""

from __future__ import annotations

import logging
import os
import sys

FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s) [%(threadName)s]"


def configure_logging(level: str | None = None, tag: str | None = None) -> None:
    """``tag`` marks every line of a helper process (the REST front) that shares the worker's log."""
    level_name = (level or os.environ.get("HEADRACE_LOG_LEVEL") or "INFO").upper()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT if tag is None else FORMAT.replace("%(message)s", f"{tag}: %(message)s")))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level_name)
    # third-party clients are chatty at INFO
    for noisy in ("urllib3", "httpx", "httpcore", "py4j"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
