"""``python -m services fetch NAME`` / ``python -m services start NAME [--port N] [--bootstrap-servers H:P]``.
"""

from __future__ import annotations

import argparse
import inspect
import logging
import signal
import sys
import threading
import time
from types import FrameType

from services import SERVICES, ServiceError, get_service


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m services", description=__doc__)
    sub = p.add_subparsers(dest="action", required=True)
    f = sub.add_parser("fetch", help="download what a service needs (for CI, ahead of tests)")
    f.add_argument("names", nargs="+", metavar="NAME", choices=sorted(SERVICES))
    s = sub.add_parser("start", help="start a service and keep it in the foreground until Ctrl-C")
    s.add_argument("name", metavar="NAME", choices=sorted(SERVICES))
    s.add_argument("--port", type=int, default=None, help="client port (default: a free one)")
    s.add_argument("--dir", default=None, help="work folder to keep data in (default: a temporary one)")
    s.add_argument(
        "--bootstrap-servers",
        default=None,
        help="the Kafka broker a client service (connect) uses (default: 127.0.0.1:9092)",
    )
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def _start(name: str, port: int | None, work_dir: str | None, bootstrap_servers: str | None = None) -> int:
    cls = get_service(name)
    kwargs: dict[str, object] = {"port": port, "work_dir": work_dir}
    if bootstrap_servers is not None:
        if "bootstrap_servers" not in inspect.signature(cls).parameters:
            raise ServiceError(f"--bootstrap-servers: {name} is not a Kafka client")
        kwargs["bootstrap_servers"] = bootstrap_servers
    svc = cls(**kwargs)  # type: ignore[arg-type]  # each service takes port= and work_dir=
    stopping = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    started = time.monotonic()
    print(f"starting {name} ...", file=sys.stderr, flush=True)
    svc.start()
    try:
        print(f"{name} ready in {time.monotonic() - started:.1f}s", file=sys.stderr)
        for key, value in svc.describe().items():
            print(f"{key}={value}")
        print("press Ctrl-C to stop", file=sys.stderr, flush=True)
        while not stopping.wait(1.0):
            if not svc.is_running():
                print(f"{name} exited on its own; see {svc.log_path}", file=sys.stderr)
                return 1
    finally:
        print(f"stopping {name} ...", file=sys.stderr, flush=True)
        # Keep the data of a folder the user named; drop a temporary one.
        svc.cleanup()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format="%(message)s")
    try:
        if args.action == "fetch":
            for name in args.names:
                get_service(name).fetch()
                print(f"{name}: fetched")
            return 0
        return _start(args.name, args.port, args.dir, args.bootstrap_servers)
    except ServiceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
