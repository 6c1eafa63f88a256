"""``headrace schema-registry -c worker.properties [--listener URL]``: the schema registry as a process of its own.

It keeps its schemas in the ``_schemas`` topic of the log the worker config names (Kafka or the embedded log;
beside a worker on the same embedded log directory it opens the log as a writer, not as its owner), and
serves Confluent's REST API at the root of ``--listener`` (default ``http://127.0.0.1:8081``, Confluent's
port). Worker keys it reads besides the log's: ``schema.registry.topic`` (``_schemas``),
``schema.compatibility.level`` (BACKWARD), and the REST keys (``rest.extension.classes`` for basic
authentication, ``rest.allowed.hosts``, ``rest.request.max.bytes``, ``ssl.*``).
"""

from __future__ import annotations

import argparse
import signal
import threading
from typing import Any

from connect.cli.bootstrap import registry_settings, worker_config_for_tools
from connect.cli.exit import CliError
from connect.logging_setup import configure_logging

__all__ = ["DEFAULT_LISTENER", "add_parser"]

DEFAULT_LISTENER = "http://127.0.0.1:8081"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("schema-registry", help="run the Confluent-compatible schema registry on the worker's log")
    p.add_argument("-c", "--config", required=True, help="worker .properties file (bootstrap.servers or "
                   "embedded.log.dir)")
    p.add_argument("--listener", default=DEFAULT_LISTENER, help=f"where to serve the API (default {DEFAULT_LISTENER})")
    p.add_argument("-v", "--verbose", action="store_true", help="(the registry always logs at INFO)")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    # start-up time: the log backends, the registry's store and Flask load only when the registry runs, not
    # whenever `headrace` builds its parser
    from connect.log import open_log_backend
    from connect.schema_registry.store import SchemaStore
    from rest import RestConfigError, RestServer
    from rest.registry_app import create_registry_app

    configure_logging("INFO")
    props = worker_config_for_tools(args.config, None)
    topic, level, replication = registry_settings(props)
    settings = {**props, "listeners": args.listener}
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    backend = open_log_backend(props)
    store = SchemaStore(backend, topic, replication_factor=replication, default_compatibility=level)
    server = None
    try:
        store.start()
        try:
            server = RestServer(create_registry_app(store, settings), settings)
        except RestConfigError as exc:
            raise CliError(str(exc)) from None
        server.start()
        print(f"Schema registry listening on {server.url}", flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        store.interrupt()  # a compatibility check under way ends now: the server's stop waits for its request
        if server is not None:
            server.stop()
        store.close()
        backend.close()
    return 0
