"""The OpenAPI document, generated from the application's routes and schemas."""

from __future__ import annotations

from typing import Any

import yaml
from fastapi.openapi.utils import get_openapi

from placement_api import microversion
from placement_api.app import create_app
from placement_api.settings import Settings


def openapi_document() -> dict[str, Any]:
    app = create_app(Settings(database_url="sqlite+aiosqlite:///:memory:"))
    return get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=app.routes,
        servers=[{"url": "http://127.0.0.1:8778"}],
        tags=[{"name": "root", "description": f"Placement {microversion.MAX_VERSION}"}],
    )


def render_openapi_yaml() -> str:
    return yaml.safe_dump(openapi_document(), sort_keys=False, allow_unicode=True)
