"""Distributed mode: workers that form a cluster through Kafka's group coordinator.

The pieces follow Kafka Connect's own: the ``connect`` group protocol's bytes
(``protocol``), the incremental cooperative assignor of KIP-415 (``assignor``),
group membership (``coordinator``) and the ``DistributedHerder`` that ties
them to the config, status and offset stores on the internal topics, which
live in ``connect.runtime.storage`` because standalone mode uses them too.
"""
