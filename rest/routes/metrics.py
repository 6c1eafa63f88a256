"""``GET /metrics``: Kafka Connect's metrics in the Prometheus text format (rest.metrics)."""

from __future__ import annotations

from flask import Blueprint, Response, current_app
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    generate_latest,
)

from rest.context import CONFIG_KEY, current_herder, setting_bool
from rest.metrics import HerderMetricsCollector
from rest.responses import RestError

__all__ = ["bp"]

COLLECTOR_KEY = "headrace.metrics_collector"

bp = Blueprint("metrics", __name__)

# prometheus_client's own process (CPU seconds, resident memory, open files), Python GC and platform series:
# what the JVM panels of a Java worker's dashboard show, under their Python names
_PROCESS = CollectorRegistry(auto_describe=False)
for _collector in (PROCESS_COLLECTOR, GC_COLLECTOR, PLATFORM_COLLECTOR):
    _PROCESS.register(_collector)


@bp.get("/metrics")
def metrics() -> Response:
    if not setting_bool(current_app.extensions[CONFIG_KEY], "metrics.prometheus.enable", True):
        raise RestError(404, "Metrics are turned off on this worker (metrics.prometheus.enable=false)")
    collector = current_app.extensions.get(COLLECTOR_KEY)
    if collector is None:
        collector = current_app.extensions[COLLECTOR_KEY] = HerderMetricsCollector(current_herder())
    return Response(collector.render() + generate_latest(_PROCESS), mimetype=None, content_type=CONTENT_TYPE_LATEST)
