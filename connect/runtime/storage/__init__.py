"""Where a worker keeps connector configs, source offsets and statuses, in either mode.

Kafka Connect keeps these in its ``runtime.storage`` package, apart from distributed mode's membership and
assignment; so does Headrace. Standalone mode keeps offsets in a file (``offsets``), statuses in memory
(``status``) and configs in a compacted topic (``config_store``); distributed mode keeps all three on the
internal topics (``config_backing_store``, ``offset_backing_store``, ``status_backing_store``), each read and
written through ``kafka_based_log``. Exactly-once source tasks write their offsets to the offsets topics of
``offset_topics`` in both modes, and the schema registry keeps its schemas on a ``kafka_based_log`` too.
"""
