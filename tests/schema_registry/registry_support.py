"""A schema registry served over real HTTP from this process: a SchemaStore on an embedded log behind the
registry app on cheroot, on a free port."""

from __future__ import annotations

from pathlib import Path

from connect.log import open_log_backend
from connect.schema_registry.store import SchemaStore
from rest import RestServer
from rest.registry_app import create_registry_app


class ServedRegistry:
    def __init__(self, log_dir: Path) -> None:
        self.backend = open_log_backend({"embedded.log.dir": str(log_dir)})
        self.store = SchemaStore(self.backend)
        self.store.start()
        settings = {"listeners": "http://127.0.0.1:0"}
        self.server = RestServer(create_registry_app(self.store, settings), settings)
        self.server.start()
        self.url = self.server.url

    def close(self) -> None:
        self.server.stop()
        self.store.close()
        self.backend.close()
