"""The separate, unauthenticated metrics port (``PLACEMENT_METRICS_PORT``).

``serve`` runs it in a thread of its own process, beside uvicorn's workers:
with multiprocess metrics any process can read every worker's samples, and
one listener per port is all a port can have.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn
from fastapi import FastAPI, Request
from starlette.responses import Response

from placement_api.db.engine import create_engine
from placement_api.db.session import SessionFactory, make_session_factory
from placement_api.observability.capacity_gauges import CapacityGauges
from placement_api.observability.exposition import metrics_response
from placement_api.observability.metrics import CONNECTION_WAIT_SECONDS
from placement_api.services.capacity_sources import CapacitySources
from placement_api.settings import Settings


def create_metrics_app(settings: Settings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = create_engine(settings.database_url, pool_size=1)
        app.state.session_factory = make_session_factory(
            engine, on_connection_wait=CONNECTION_WAIT_SECONDS.observe
        )
        app.state.capacity_gauges = CapacityGauges(
            CapacitySources.from_settings(settings),
            settings.capacity_metrics_interval,
            missed_intervals=settings.heartbeat_missed_intervals,
        )
        try:
            yield
        finally:
            await engine.dispose()

    app = FastAPI(lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/metrics")
    async def scrape(request: Request) -> Response:
        factory: SessionFactory = request.app.state.session_factory
        gauges: CapacityGauges = request.app.state.capacity_gauges
        return await metrics_response(factory, gauges, settings.healthcheck_timeout)

    return app


def start_metrics_port(settings: Settings, port: int) -> threading.Thread:
    config = uvicorn.Config(
        create_metrics_app(settings),
        host=settings.metrics_host,
        port=port,
        log_config=None,
        access_log=False,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="metrics-port", daemon=True)
    thread.start()
    return thread
