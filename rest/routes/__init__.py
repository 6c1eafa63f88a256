"""The REST API's blueprints, one module per resource group of Kafka Connect's API."""

from __future__ import annotations

from flask import Blueprint

from rest.routes.connectors import bp as connectors_bp
from rest.routes.loggers import bp as loggers_bp
from rest.routes.metrics import bp as metrics_bp
from rest.routes.plugins import bp as plugins_bp
from rest.routes.root import bp as root_bp
from rest.routes.ui import bp as ui_bp

__all__ = ["BLUEPRINTS"]

BLUEPRINTS: tuple[Blueprint, ...] = (root_bp, connectors_bp, plugins_bp, loggers_bp, metrics_bp, ui_bp)
