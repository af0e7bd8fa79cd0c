"""Host heartbeats: when each root provider's agent last reported, and the
utilisation it measured. A heartbeat is not a provider write: it moves no
generation and records nothing in the change feed (docs/liveness.md)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, NoReturn, cast

from sqlalchemy import JSON, ColumnElement, Integer, Table, literal, not_, null, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api import errors
from placement_api.db import dialect
from placement_api.db.models import ProviderHeartbeat, ResourceProvider
from placement_api.domain import provider_filters, providers

_TABLE = cast(Table, ProviderHeartbeat.__table__)


@dataclass(frozen=True)
class Heartbeat:
    provider_uuid: str
    last_seen: datetime
    interval: int
    metrics: dict[str, float]
    metrics_at: datetime | None
    down_after: datetime


@dataclass(frozen=True)
class ListedHeartbeat:
    heartbeat: Heartbeat
    name: str
    alive: bool


@dataclass(frozen=True)
class HeartbeatList:
    now: datetime
    heartbeats: list[ListedHeartbeat]


def _utc(moment: datetime) -> datetime:
    """SQLite hands back naive datetimes; every stored time is UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _heartbeat(uuid: str, row: Any, missed_intervals: int) -> Heartbeat:
    """From a row with the table's columns; down_after is the liveness rule."""
    last_seen = _utc(row.last_seen)
    return Heartbeat(
        provider_uuid=uuid,
        last_seen=last_seen,
        interval=row.interval_seconds,
        metrics=row.metrics,
        metrics_at=_utc(row.metrics_at) if row.metrics_at else None,
        down_after=last_seen + timedelta(seconds=row.interval_seconds * missed_intervals),
    )


async def record(
    session: AsyncSession,
    uuid: str,
    interval: int,
    metrics: dict[str, float] | None,
    missed_intervals: int,
) -> Heartbeat:
    """Insert or refresh the provider's heartbeat in one statement (``now()`` is
    PostgreSQL's; SQLite gets this host's time as a parameter)::

        INSERT INTO provider_heartbeats
            (resource_provider_id, last_seen, interval_seconds, metrics, metrics_at)
        SELECT id, now(), :interval, :metrics, now()      -- NULL without metrics
        FROM resource_providers WHERE uuid = :uuid AND parent_provider_id IS NULL
        ON CONFLICT (resource_provider_id) DO UPDATE SET
            last_seen = excluded.last_seen, interval_seconds = excluded.interval_seconds
            [, metrics = excluded.metrics, metrics_at = excluded.metrics_at]  -- with metrics
        RETURNING last_seen, interval_seconds, metrics, metrics_at

    The row is written only for a root provider; when nothing is written,
    a second look says whether the provider is unknown (404) or a child (400).
    Without ``metrics`` the stored ones and their time are kept.
    """
    now = dialect.clock(session)
    given = metrics is not None
    source = select(
        ResourceProvider.id,
        now,
        literal(interval, Integer),
        literal(metrics or {}, JSON),
        now if given else null(),
    ).where(ResourceProvider.uuid == uuid, ResourceProvider.parent_provider_id.is_(None))
    statement = dialect.insert(session, _TABLE).from_select(
        ["resource_provider_id", "last_seen", "interval_seconds", "metrics", "metrics_at"], source
    )
    refreshed: dict[str, Any] = {
        "last_seen": statement.excluded.last_seen,
        "interval_seconds": statement.excluded.interval_seconds,
    }
    if given:
        refreshed |= {
            "metrics": statement.excluded.metrics,
            "metrics_at": statement.excluded.metrics_at,
        }
    upsert = statement.on_conflict_do_update(
        index_elements=["resource_provider_id"], set_=refreshed
    ).returning(
        _TABLE.c.last_seen, _TABLE.c.interval_seconds, _TABLE.c.metrics, _TABLE.c.metrics_at
    )
    try:
        row = (await session.execute(upsert)).first()
    except IntegrityError as exc:  # the provider was deleted after the SELECT saw it
        raise errors.NotFound(f"No resource provider with uuid {uuid} found") from exc
    if row is None:
        await _refuse(session, uuid)
    return _heartbeat(uuid, row, missed_intervals)


async def _refuse(session: AsyncSession, uuid: str) -> NoReturn:
    provider = await providers.get(session, uuid)
    raise errors.BadRequest(
        f"Resource provider {uuid} is not a root provider (its root is {provider.root_uuid}): "
        "only a tree's root, the host, sends heartbeats."
    )


async def list_all(
    session: AsyncSession,
    missed_intervals: int,
    *,
    alive: bool | None = None,
    in_tree: str | None = None,
) -> HeartbeatList:
    """Every heartbeat (of ``in_tree``'s root only, when given), in provider order,
    with ``alive`` judged against the one clock; ``alive`` keeps only those alive or
    down, in the statement: a thousand hosts down of ten thousand reads a thousand rows."""
    now = _utc(await session.scalar(select(dialect.clock(session))) or datetime.now(UTC))
    is_alive = alive_at(session, now, missed_intervals)
    query = (
        select(
            ResourceProvider.uuid,
            ResourceProvider.name,
            ProviderHeartbeat.last_seen,
            ProviderHeartbeat.interval_seconds,
            ProviderHeartbeat.metrics,
            ProviderHeartbeat.metrics_at,
            is_alive.label("alive"),
        )
        .join(ResourceProvider, ResourceProvider.id == ProviderHeartbeat.resource_provider_id)
        .order_by(ProviderHeartbeat.resource_provider_id)
    )
    if in_tree is not None:
        query = query.where(provider_filters.in_tree_of(in_tree))
    if alive is not None:
        query = query.where(is_alive if alive else not_(is_alive))
    found = [
        ListedHeartbeat(_heartbeat(row.uuid, row, missed_intervals), row.name, bool(row.alive))
        for row in await session.execute(query)
    ]
    return HeartbeatList(now, found)


def alive_at(session: AsyncSession, now: datetime, missed_intervals: int) -> ColumnElement[bool]:
    """``now <= down_after`` in SQL, exact to the microsecond as ``_heartbeat``'s
    ``down_after`` is: ``last_seen >= now - interval * missed_intervals`` seconds."""
    grace = ProviderHeartbeat.interval_seconds * missed_intervals
    return dialect.not_before(session, _TABLE.c.last_seen, now, grace)
