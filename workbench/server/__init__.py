"""The embedded FHIR server: app factory, routes from definitions, auth, persistence."""

from __future__ import annotations

from workbench.server.app import create_app

__all__ = ["create_app"]
