"""``GET /metrics``: Kafka Connect's metrics in the Prometheus text format (rest.metrics)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from flask import Blueprint, Response, current_app

from rest.context import CONFIG_KEY, current_herder, setting_bool
from rest.responses import RestError

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["bp"]

COLLECTOR_KEY = "headrace.metrics_collector"

bp = Blueprint("metrics", __name__)


@functools.cache
def _process_registry() -> CollectorRegistry:
    """prometheus_client's own process (CPU seconds, resident memory, open files), Python GC and platform
    series: what the JVM panels of a Java worker's dashboard show, under their Python names. Built on the
    first scrape: prometheus_client costs every worker start a tenth of a CPU-second, and most are never
    scraped."""
    from prometheus_client import GC_COLLECTOR, PLATFORM_COLLECTOR, PROCESS_COLLECTOR, CollectorRegistry

    registry = CollectorRegistry(auto_describe=False)
    for collector in (PROCESS_COLLECTOR, GC_COLLECTOR, PLATFORM_COLLECTOR):
        registry.register(collector)
    return registry


@bp.get("/metrics")
def metrics() -> Response:
    if not setting_bool(current_app.extensions[CONFIG_KEY], "metrics.prometheus.enable", True):
        raise RestError(404, "Metrics are turned off on this worker (metrics.prometheus.enable=false)")
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    from rest.metrics import HerderMetricsCollector

    collector = current_app.extensions.get(COLLECTOR_KEY)
    if collector is None:
        collector = current_app.extensions[COLLECTOR_KEY] = HerderMetricsCollector(current_herder())
    return Response(collector.render() + generate_latest(_process_registry()), mimetype=None, content_type=CONTENT_TYPE_LATEST)
