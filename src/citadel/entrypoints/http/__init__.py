"""The HTTP edge: JSON API under /v1, the web UI, health and metrics (``citadel serve``)."""

from citadel.entrypoints.http.app import create_app

__all__ = ["create_app"]
