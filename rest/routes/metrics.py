"""``GET /metrics``: Kafka Connect's metrics in the Prometheus text format (rest.metrics)."""

from __future__ import annotations

from flask import Blueprint, Response, current_app
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry

from rest.context import CONFIG_KEY, current_herder, setting_bool
from rest.metrics import HerderMetricsCollector, render_metrics
from rest.responses import RestError

__all__ = ["bp"]

REGISTRY_KEY = "headrace.metrics_registry"

bp = Blueprint("metrics", __name__)


@bp.get("/metrics")
def metrics() -> Response:
    if not setting_bool(current_app.extensions[CONFIG_KEY], "metrics.prometheus.enable", True):
        raise RestError(404, "Metrics are turned off on this worker (metrics.prometheus.enable=false)")
    registry = current_app.extensions.get(REGISTRY_KEY)
    if registry is None:
        # one registry per app, holding only our collector: no process or platform collectors, no _created
        registry = CollectorRegistry(auto_describe=False)
        registry.register(HerderMetricsCollector(current_herder()))
        current_app.extensions[REGISTRY_KEY] = registry
    return Response(render_metrics(registry), mimetype=None, content_type=CONTENT_TYPE_LATEST)
