"""Source offsets kept in memory, for a worker under test."""

from __future__ import annotations

from collections.abc import Mapping

from connect.runtime.storage.offsets import OffsetStore

__all__ = ["MemoryOffsetStore"]


class MemoryOffsetStore(OffsetStore):
    """The worker's source-offset store, in memory: nothing survives the process.

    ``commits`` holds every commit in order (each a map of offset key to JSON text, None for a deletion);
    set ``fail`` to an exception to make the next commit raise it, as a store that cannot write would.
    """

    def __init__(self) -> None:
        super().__init__()
        self.commits: list[dict[str, str | None]] = []
        self.fail: Exception | None = None

    def start(self) -> None:
        pass

    def _persist(self, changes: Mapping[str, str | None]) -> None:
        if self.fail is not None:
            error, self.fail = self.fail, None
            raise error
        self.commits.append(dict(changes))
