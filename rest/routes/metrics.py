"""``GET /metrics``: Kafka Connect's metrics in the Prometheus text format (rest.metrics)."""

from __future__ import annotations

from flask import Blueprint, Response, current_app
from prometheus_client import CONTENT_TYPE_LATEST

from rest.context import CONFIG_KEY, current_herder, setting_bool
from rest.metrics import HerderMetricsCollector
from rest.responses import RestError

__all__ = ["bp"]

COLLECTOR_KEY = "headrace.metrics_collector"

bp = Blueprint("metrics", __name__)


@bp.get("/metrics")
def metrics() -> Response:
    if not setting_bool(current_app.extensions[CONFIG_KEY], "metrics.prometheus.enable", True):
        raise RestError(404, "Metrics are turned off on this worker (metrics.prometheus.enable=false)")
    collector = current_app.extensions.get(COLLECTOR_KEY)
    if collector is None:
        # only our collector: no process or platform collectors, no _created series
        collector = current_app.extensions[COLLECTOR_KEY] = HerderMetricsCollector(current_herder())
    return Response(collector.render(), mimetype=None, content_type=CONTENT_TYPE_LATEST)
