"""Where Headrace answers differently from Apache Kafka Connect 4.1 on purpose, each with its reason.

tests/compat/test_side_by_side.py sends the same REST requests to both and fails on any difference in
status code or JSON key structure that is not listed here, and on any entry here that the run no longer
sees (so the list stays short and true). docs/guide/rest-api.md ("Checked against Apache Kafka Connect 4.1") lists the same entries
(tests/compat/test_known_differences_documented.py checks it).
"""

from __future__ import annotations

import attrs

__all__ = ["KNOWN_DIFFERENCES", "KnownDifference"]


@attrs.frozen
class KnownDifference:
    """One intended difference.

    ``step`` names a step of the side-by-side script (or several, as a tuple), or ``*`` for every step. Either the status codes
    differ (``java_status`` / ``headrace_status``), or the JSON keys do: ``headrace_only`` / ``java_only``
    are key paths (as the test prints them, e.g. ``tasks[].metrics``) that only one side sends; a path
    covers everything below it.
    """

    step: str | tuple[str, ...]
    reason: str
    java_status: int | None = None
    headrace_status: int | None = None
    headrace_only: tuple[str, ...] = ()
    java_only: tuple[str, ...] = ()


KNOWN_DIFFERENCES: tuple[KnownDifference, ...] = (
    KnownDifference(
        step="*",
        headrace_only=("metrics",),
        reason="Headrace extension: each task's status carries its record counters (failed, skipped, retried, "
        "sent to the DLQ), which Kafka Connect exposes only over JMX.",
    ),
    KnownDifference(
        step=("create, config missing", "create, invalid JSON", "create, JSON array"),
        java_status=500,
        headrace_status=400,
        reason="Java answers a malformed creation request with 500 (a NullPointerException or a Jackson error); "
        "the mistake is the client's, so Headrace answers 400 saying what is wrong with the body.",
    ),
    KnownDifference(
        step=("offsets PATCH, source, position not a number", "offsets PATCH, source, partition without filename",
              "offsets PATCH, sink, negative offset"),
        java_status=500,
        headrace_status=400,
        reason="Both refuse offsets the connector cannot use; Java with 500, Headrace with 400 naming the problem "
        "(source offsets through the connector's alter_offsets hook, sink offsets before the consumer group).",
    ),
    KnownDifference(
        step="offsets PATCH, source, offset key misspelt",
        java_status=500,
        headrace_status=400,
        reason="Java refuses an offsets entry with a key other than partition and offset with 500 (Jackson's "
        "unrecognized field); the mistake is the client's, so Headrace answers 400 naming the key. Ignoring the "
        "key instead would read a misspelt offset as a missing one, which resets the partition.",
    ),
    KnownDifference(
        step="logger bad level",
        java_status=404,
        headrace_status=400,
        reason="Java answers 404 for an unknown log level although the logger exists; the level in the body is "
        "what is wrong, so Headrace answers 400 listing the valid levels.",
    ),
    KnownDifference(
        step="restart with a malformed includeTasks",
        java_status=204,
        headrace_status=400,
        reason="Jersey reads any value but 'true' as false, so a typo such as includeTasks=yes silently restarts "
        "less than asked; Headrace refuses it with 400 naming the parameter.",
    ),
)
