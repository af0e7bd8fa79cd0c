"""Application factory: engine, services, middleware, routers and error handlers."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from placement_api import microversion
from placement_api.auth.context import KEYSTONE, Authenticator, NoAuth2Authenticator
from placement_api.auth.fastpath.decision_memory import decision_memory_gaps
from placement_api.auth.keystone import NEEDS_CONFIG_FILE, KeystoneAuthenticator
from placement_api.auth.policy import Policy
from placement_api.db.capabilities import direct_driver_gaps
from placement_api.db.driver import DIRECT
from placement_api.db.engine import engine_for, standby_engine_for
from placement_api.db.replica import Replica
from placement_api.db.session import SessionFactory, make_session_factory
from placement_api.domain.candidates.provider_index import ProviderIndex
from placement_api.domain.changes import recording_session_factory
from placement_api.observability import metrics
from placement_api.observability.capacity_gauges import CapacityGauges
from placement_api.services.capacity_sources import CapacitySources
from placement_api.services.change_feed import ChangeFeed
from placement_api.services.standard_names import write_standard_names
from placement_api.serving.gc_policy import freeze_what_startup_made
from placement_api.settings import Settings, get_settings
from placement_api.web.access_log import AccessMiddleware
from placement_api.web.cors import PlacementCORSMiddleware
from placement_api.web.deps import Services
from placement_api.web.error_handlers import install_error_handlers
from placement_api.web.fastpath.app import PlacementApp
from placement_api.web.fastpath.capabilities import dispatch_gaps, route_plan_gaps
from placement_api.web.middleware import PlacementRequestMiddleware
from placement_api.web.read_after import ReadAfterMiddleware
from placement_api.web.request_limits import RequestLimitsMiddleware
from placement_api.web.routers import ROUTERS, health
from placement_api.web.routers import metrics as metrics_router

LOG = logging.getLogger(__name__)


NOAUTH2_WARNING = (
    "auth strategy noauth2: requests are NOT authenticated; whoever reaches the port "
    "acts as any user, project and role it names (X-Auth-Token 'admin' is an "
    "administrator). Use PLACEMENT_AUTH_STRATEGY=keystone outside development."
)


def _authenticator(settings: Settings) -> Authenticator:
    if settings.auth_strategy != KEYSTONE:
        return NoAuth2Authenticator()
    if settings.config_file is None:
        raise ValueError(NEEDS_CONFIG_FILE)
    return KeystoneAuthenticator(settings.config_file, timeout=settings.keystone_timeout)


def _replica(settings: Settings, primary: SessionFactory) -> Replica | None:
    """The standby GET routes read from, when ``database_read_url`` names one."""
    if settings.database_read_url is None or settings.is_sqlite:
        return None
    standby = standby_engine_for(settings, settings.database_read_url)
    return Replica(
        primary,
        make_session_factory(standby, on_connection_wait=metrics.CONNECTION_WAIT_SECONDS.observe),
        settings.database_read_after_wait,
        timeout=settings.database_read_timeout,
        retry_interval=settings.database_read_retry_interval,
    )


async def _sync_standard_names(factory: SessionFactory) -> None:
    """An API that reaches only a standby still starts, serves reads and
    answers writes with 503 (its primary synced the names)."""
    if not await write_standard_names(factory):
        LOG.warning(
            "the database is read-only (a standby): serving reads; writes answer 503 "
            "until it is the primary"
        )


def _candidates_index(settings: Settings, factory: SessionFactory) -> ProviderIndex | None:
    if not settings.candidates_index:
        return None
    return ProviderIndex(
        factory,
        max_providers=settings.candidates_index_max_providers,
        max_age=settings.candidates_index_max_age,
        retry_interval=settings.database_read_retry_interval,
    )


def fence_fast_paths(app: PlacementApp) -> bool:
    """Check what each bypass of a library's internals relies on; turn off,
    with one warning each, those whose library changed (their public path
    serves instead). Returns whether policy decisions may be remembered."""
    driver, dispatch, memory = direct_driver_gaps(), dispatch_gaps(app), decision_memory_gaps()
    for gaps, instead in (
        (driver, "statements go through SQLAlchemy's session"),
        (route_plan_gaps(), "routes keep FastAPI's request handler"),
        (dispatch, "requests go through FastAPI's own routing and middleware"),
        (memory, "policy decisions are not remembered"),
    ):
        if gaps:
            LOG.warning("%s; %s instead", "; ".join(gaps), instead)
    DIRECT.usable = not driver
    app.fast_dispatch = not dispatch
    return not memory


def create_app(settings: Settings | None = None) -> PlacementApp:
    settings = settings or get_settings()
    # Built now so a bad configuration stops start-up, not the first request.
    authenticator = _authenticator(settings)
    capacity = CapacitySources.from_settings(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = engine_for(settings)
        app.state.engine = engine
        # What the pool may hold (db.engine); SQLite has no pool.
        pool_capacity = (
            0
            if settings.is_sqlite
            else settings.database_pool_size + settings.database_max_overflow
        )
        metrics.observe_pool(engine)
        metrics.POOL_CAPACITY.inc(pool_capacity)
        factory = recording_session_factory(
            engine, on_connection_wait=metrics.CONNECTION_WAIT_SECONDS.observe
        )
        await _sync_standard_names(factory)
        policy = Policy(
            policy_file=settings.policy_file,
            enforce_new_defaults=settings.enforce_new_defaults,
            enforce_scope=settings.enforce_scope,
            remember_decisions=remember_decisions,
        )
        if isinstance(authenticator, NoAuth2Authenticator):
            LOG.warning(NOAUTH2_WARNING)
        replica = _replica(settings, factory)
        change_feed = ChangeFeed(settings, factory, engine.url)
        await change_feed.start()
        app.state.services = Services(
            settings=settings,
            session_factory=factory,
            policy=policy,
            authenticator=authenticator,
            change_feed=change_feed,
            capacity=capacity,
            capacity_gauges=CapacityGauges(
                capacity,
                settings.capacity_metrics_interval,
                missed_intervals=settings.heartbeat_missed_intervals,
            ),
            replica=replica,
            candidates_index=_candidates_index(settings, factory),
        )
        freeze_what_startup_made()
        try:
            yield
        finally:
            await change_feed.close()
            if replica is not None:
                await replica.standby.kw["bind"].dispose()
            if isinstance(authenticator, KeystoneAuthenticator):
                authenticator.close()
            await engine.dispose()
            metrics.POOL_CAPACITY.dec(pool_capacity)
            metrics.mark_worker_dead(os.getpid())

    app = PlacementApp(
        title="placement-api",
        version=str(microversion.MAX_VERSION),
        description=(
            "Resource inventory, usage and allocation candidates; wire-compatible with the "
            "OpenStack Placement API, microversions "
            f"{microversion.MIN_VERSION} to {microversion.MAX_VERSION}. Send "
            "`OpenStack-API-Version: placement <version>`; shapes that depend on the "
            "microversion are described per operation."
        ),
        lifespan=lifespan,
        # Upstream has one spelling of each path: "/resource_providers/" is a
        # 404, not a redirect (whose Location would come from the Host header).
        redirect_slashes=False,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        # FastAPI's own OpenTelemetry: this service installs no OpenTelemetry
        # SDK (its metrics are Prometheus'), and left on, FastAPI asks the
        # global providers on every request whether one was set up since.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    remember_decisions = fence_fast_paths(app)
    routers = [*ROUTERS, health.router]
    if settings.metrics_enabled:
        routers.append(metrics_router.router)
    # The routers' own routes, in one flat list: include_router would nest
    # each router (prefix, dependencies and tags to merge, none used here)
    # and match every request through that nesting, twice.
    for router in routers:
        app.router.routes.extend(router.routes)
    install_error_handlers(app)
    app.add_middleware(ReadAfterMiddleware)
    app.add_middleware(RequestLimitsMiddleware, settings=settings)
    app.add_middleware(PlacementRequestMiddleware)
    app.add_middleware(AccessMiddleware, access_log=settings.access_log)
    if settings.cors_allowed_origins:
        app.add_middleware(
            PlacementCORSMiddleware,
            allow_origins=settings.cors_allowed_origins,
            allow_methods=["GET", "PUT", "POST", "DELETE", "PATCH"],
            allow_headers=settings.cors_allow_headers,
            expose_headers=[microversion.HEADER, "x-openstack-request-id"],
            allow_credentials=True,
        )
    return app
