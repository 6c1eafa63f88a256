"""Which requests a worker serves before it can take requests (issue #36: honest readiness).

As Kafka Connect 4.1, a starting worker answers nothing but its health probe (KIP-1017); everything else
gets 503 with ``Retry-After`` (rest.app), from the worker's own server and from its REST front process alike.
Kept free of Flask and the routes: the front process checks it on every request.
"""

from __future__ import annotations

__all__ = ["HEALTH_PATH", "SCHEMA_REGISTRY_PREFIX", "STARTING_MESSAGE", "STARTING_RETRY_AFTER_S",
           "answers_while_starting", "under_schema_registry"]

# KIP-1017's probe, with its own body while the worker starts
HEALTH_PATH = "/health"
# Not Kafka Connect's API and not the herder's: the registry reads its own topic, and the worker's own tasks,
# started before the herder is ready, may already register schemas through it
SCHEMA_REGISTRY_PREFIX = "/schema-registry"
# what a starting worker answers, here so that its REST front gives the same answer without importing the routes
STARTING_MESSAGE = "Worker is still starting up and cannot handle requests yet."
# Seconds a client is told to wait before retrying a request refused during start-up; a worker on Kafka
# reads its config topic in about that time.
STARTING_RETRY_AFTER_S = 5


def under_schema_registry(path: str) -> bool:
    return path == SCHEMA_REGISTRY_PREFIX or path.startswith(SCHEMA_REGISTRY_PREFIX + "/")


def answers_while_starting(path: str) -> bool:
    """Whether a request for ``path`` is served before the worker can take requests."""
    return path.rstrip("/") == HEALTH_PATH or under_schema_registry(path)
