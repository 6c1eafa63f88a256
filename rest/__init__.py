"""Headrace's REST API: a Flask app over the Herder interface, served by cheroot in the worker."""

from rest.app import create_app
from rest.server import RestConfigError, RestServer

__all__ = ["RestConfigError", "RestServer", "create_app"]
