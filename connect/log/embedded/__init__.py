"""The embedded backend: a durable, multi-process-safe, Kafka-style log in a local directory.

Modules, bottom up: ``codec`` (batch format), ``index`` and ``segment``
(files), ``partition`` (appends, recovery, lookups), ``reader`` (sequential
reads), ``topics`` and ``groups`` (catalogue and committed offsets),
``coordinator`` (in-process group membership), ``producer``, ``consumer``,
``admin``, ``retention``, ``compaction``, ``cleaner`` and ``backend``
(``EmbeddedBackend``, the entry point).
"""
