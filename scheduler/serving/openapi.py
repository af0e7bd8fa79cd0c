"""The scheduler service's OpenAPI document, generated from its routes and models."""

from __future__ import annotations

from typing import Any

import yaml

from scheduler.serving.service import create_app
from scheduler.settings import DEFAULT_PORT, SchedulerSettings


def openapi_document() -> dict[str, Any]:
    app = create_app(SchedulerSettings())
    document = app.openapi()
    document["servers"] = [{"url": f"http://127.0.0.1:{DEFAULT_PORT}"}]
    return document


def render_openapi_yaml() -> str:
    return yaml.safe_dump(openapi_document(), sort_keys=False, allow_unicode=True)
