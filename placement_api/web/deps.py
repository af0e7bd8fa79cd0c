"""Typed FastAPI dependencies shared by every router."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from functools import cached_property
from types import TracebackType
from typing import Annotated, Any, Protocol

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api import errors
from placement_api.auth.context import Authenticator, RequestContext
from placement_api.auth.policy import Policy
from placement_api.db.replica import PRIMARY, Replica, is_position
from placement_api.db.second_connection import SecondConnection
from placement_api.db.session import SessionFactory, UnitOfWork
from placement_api.domain import changes
from placement_api.domain.candidates.provider_index import ProviderIndex
from placement_api.microversion import Version
from placement_api.observability.capacity_gauges import CapacityGauges
from placement_api.services.capacity_sources import CapacitySources
from placement_api.services.change_feed import ChangeFeed
from placement_api.settings import Settings
from placement_api.web import read_after
from placement_api.web.input_checks import decode_json

LOG = logging.getLogger(__name__)
JSON_MEDIA_TYPE = "application/json"
EVENT_STREAM_MEDIA_TYPE = "text/event-stream"


class ReadUnit(Protocol):
    """What a route's read holds: a unit of work, on the primary or a standby."""

    async def __aenter__(self) -> AsyncSession: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None: ...

    def second_connection(self) -> SecondConnection | None: ...


@dataclass(frozen=True)
class Database:
    session_factory: SessionFactory
    change_feed: ChangeFeed
    # Set when GET routes read from a standby (database_read_url).
    replica: Replica | None = None

    def read(self) -> ReadUnit:
        state = read_after.CURRENT.get()
        wanted = state.wanted if state is not None else None
        if wanted is not None and not is_position(wanted):
            raise errors.BadRequest(
                f"Invalid {read_after.HEADER} header {wanted[:40]!r}: send back the value a "
                "write answered with."
            )
        if self.replica is None:
            return UnitOfWork(self.session_factory, write=False)
        return self.replica.read(wanted)

    def write(self) -> AbstractAsyncContextManager[AsyncSession]:
        # With a standby, the answer names the write's position (a request's only).
        position = self.replica is not None and read_after.CURRENT.get() is not None
        unit = UnitOfWork(
            self.session_factory, write=True, committed=self._committed, position=position
        )
        if self.replica is None:
            return _on_primary(unit)
        return _positioned(unit, self.replica)

    def _committed(self, session: AsyncSession) -> None:
        if changes.recorded(session):
            self.change_feed.committed()


@asynccontextmanager
async def _on_primary(unit: UnitOfWork) -> AsyncIterator[AsyncSession]:
    """A write whose answer says "read the primary": every read here does."""
    async with unit as session:
        yield session
    state = read_after.CURRENT.get()
    if state is not None:
        state.written = PRIMARY


@asynccontextmanager
async def _positioned(unit: UnitOfWork, replica: Replica) -> AsyncIterator[AsyncSession]:
    """A write whose answer carries the primary's position once it committed:
    read on the write's own connection after its COMMIT, else (the public
    path, or that read failed) through a unit of work of its own."""
    async with unit as session:
        yield session
    state = read_after.CURRENT.get()
    if state is None:
        return
    if unit.written is not None:
        state.written = unit.written
        return
    try:
        state.written = await replica.position()
    except Exception as exc:
        # Committed: the write's answer stands, and its reader must go to the
        # primary, since no standby can be known to hold the write.
        state.written = PRIMARY
        LOG.warning("write committed, its WAL position unknown: %s", exc)


@dataclass(frozen=True)
class Services:
    """What the app builds once at start-up and every request shares."""

    settings: Settings
    session_factory: SessionFactory
    policy: Policy
    authenticator: Authenticator
    change_feed: ChangeFeed
    capacity: CapacitySources
    capacity_gauges: CapacityGauges
    replica: Replica | None = None
    candidates_index: ProviderIndex | None = None

    @cached_property
    def database(self) -> Database:
        """What every route's DbDep is: built once, not per request."""
        return Database(self.session_factory, self.change_feed, self.replica)


@dataclass(frozen=True)
class ApiRequest:
    """The negotiated facts of one API request."""

    version: Version
    context: RequestContext
    request_id: str
    policy: Policy
    settings: Settings
    request: Request

    async def body(self) -> Any:
        """The JSON body; read after authorization so a denied caller learns nothing."""
        return await json_body(self.request)

    def require(self, feature: str) -> None:
        """A route that microversion ``feature`` introduced does not exist before it."""
        if not self.version.has(feature):
            raise errors.NotFound("The resource could not be found.")

    def authorize(self, rule: str, target: Mapping[str, object] | None = None) -> None:
        self.policy.authorize(rule, self.context, target)


def services(request: Request) -> Services:
    found: Services = request.app.state.services
    return found


def _accepts_json(accept: str | None) -> bool:
    if not accept:
        return True
    for part in accept.split(","):
        media, *params = (item.strip() for item in part.split(";"))
        quality = next((p[2:] for p in params if p.startswith("q=")), "1")
        try:
            weight = float(quality)
        except ValueError:
            weight = 0.0
        if weight > 0 and media.lower() in (JSON_MEDIA_TYPE, "application/*", "*/*"):
            return True
    return False


def wants_event_stream(accept: str | None) -> bool:
    """The client asked for server-sent events (``GET /changes`` offers them)."""
    media = (part.split(";")[0].strip().lower() for part in (accept or "").split(","))
    return EVENT_STREAM_MEDIA_TYPE in media


async def api_request(request: Request) -> ApiRequest:
    # Like Placement, only reads insist on a JSON Accept; a write whose
    # client asked for something else still gets its (JSON) error or result.
    if request.method in ("GET", "HEAD") and not _accepts_json(request.headers.get("accept")):
        raise errors.NotAcceptable("Only application/json is provided")
    return await _negotiated(request)


async def event_stream_request(request: Request) -> ApiRequest:
    """As ``api_request``, and ``Accept: text/event-stream`` is acceptable too."""
    if wants_event_stream(request.headers.get("accept")):
        return await _negotiated(request)
    return await api_request(request)


async def _negotiated(request: Request) -> ApiRequest:
    shared = services(request)
    request_id: str = request.state.request_id
    context = await shared.authenticator.authenticate(request.headers, request_id)
    # For the access log line, written after the answer.
    request.state.context = context
    return ApiRequest(
        version=request.state.microversion,
        context=context,
        request_id=request_id,
        policy=shared.policy,
        settings=shared.settings,
        request=request,
    )


async def database(request: Request) -> Database:
    return services(request).database


async def json_body(request: Request) -> Any:
    """The request body as JSON, after Placement's content-type rules."""
    raw = await request.body()
    content_type = request.headers.get("content-type")
    if content_type is None:
        if raw:
            raise errors.BadRequest("content-type header required when body is present")
        raise errors.UnsupportedMediaType(
            "The media type None is not supported, use application/json"
        )
    media = content_type.split(";")[0].strip().lower()
    if media != JSON_MEDIA_TYPE:
        raise errors.UnsupportedMediaType(
            f"The media type {media} is not supported, use application/json"
        )
    return decode_json(raw, max_depth=services(request).settings.max_json_depth)


ApiDep = Annotated[ApiRequest, Depends(api_request)]
EventStreamApiDep = Annotated[ApiRequest, Depends(event_stream_request)]
DbDep = Annotated[Database, Depends(database)]
