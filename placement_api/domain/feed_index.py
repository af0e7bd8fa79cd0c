"""The change feed's indexes: sequencing runs give committed entries their
indexes (PostgreSQL; SQLite indexes them on insert, see ``changes``), and
readers read the feed by index.

Readers (``read``) see a gap-free, duplicate-free list; a ``since`` whose
successor has been pruned (or that lies beyond the feed) is ``Gone``. Every
page carries the feed's epoch: a sequencing run on a new PostgreSQL timeline
(a promoted standby, which may not have every index the old primary gave)
mints a new one, so a follower knows its indexes may mean other entries now.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api import errors
from placement_api.db.models import Change, ChangeFeedHead
from placement_api.domain.changes import HEAD_ID

# Entries indexed per statement; a run repeats it until none is left.
SEQUENCING_BATCH = 5000

# Numbers the oldest committed entries without an index after ``:head``
# and moves the head past them. The caller holds the head's row lock, so
# this statement's snapshot is newer than every earlier run's commit.
_SEQUENCE = text(
    """
WITH pending AS (
    SELECT commit_seq, ordinal, row_number() OVER (ORDER BY commit_seq, ordinal) AS n
    FROM (
        SELECT commit_seq, ordinal FROM changes WHERE feed_index IS NULL
        ORDER BY commit_seq, ordinal LIMIT :batch
    ) AS oldest
), numbered AS (
    UPDATE changes SET feed_index = :head + pending.n
    FROM pending
    WHERE changes.commit_seq = pending.commit_seq AND changes.ordinal = pending.ordinal
    RETURNING changes.feed_index
)
UPDATE change_feed_head SET last_index = (SELECT max(feed_index) FROM numbered)
WHERE id = :head_id AND EXISTS (SELECT 1 FROM numbered)
RETURNING last_index
"""
)


# The head, locked, with the timeline this server writes WAL on now (the
# first eight hex digits of the current WAL file's name).
_LOCK_HEAD = text(
    """
SELECT last_index, epoch, epoch_timeline,
       ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint AS timeline
FROM change_feed_head WHERE id = :head_id FOR UPDATE
"""
)


@dataclass(frozen=True)
class FeedHead:
    """The feed's last index and the epoch its indexes belong to."""

    index: int
    epoch: str


# For writes that change rows without recording entries (``db import``,
# ``audit --fix``): a new epoch tells every follower that keeps a copy
# (schedulers' caches, the API's provider index) to read everything anew.
NEW_EPOCH = text("UPDATE change_feed_head SET epoch = :epoch WHERE id = :head_id")


def new_epoch(reason: str) -> dict[str, object]:
    """Parameters for ``NEW_EPOCH``: an epoch named after ``reason``."""
    return {"epoch": f"{reason}-{uuid.uuid4().hex[:16]}", "head_id": HEAD_ID}


def _mint_epoch(timeline: int) -> str:
    return f"{timeline}-{uuid.uuid4().hex[:16]}"


async def sequence(session: AsyncSession) -> FeedHead:
    """Index every committed entry still without one; the feed's head after.
    On PostgreSQL it needs a write session: it holds the head's row lock
    until the transaction ends, and a server on another timeline than the
    epoch's (a promoted standby) mints a new epoch first. SQLite indexes
    entries as they are inserted, so there it only reads the head."""
    if session.get_bind().dialect.name != "postgresql":
        return await head(session)
    locked = (await session.execute(_LOCK_HEAD, {"head_id": HEAD_ID})).one()
    index, epoch = int(locked.last_index), str(locked.epoch)
    if int(locked.timeline) != int(locked.epoch_timeline):
        epoch = _mint_epoch(int(locked.timeline))
        await session.execute(
            update(ChangeFeedHead)
            .where(ChangeFeedHead.id == HEAD_ID)
            .values(epoch=epoch, epoch_timeline=int(locked.timeline))
        )
    while True:
        advanced = await session.scalar(
            _SEQUENCE, {"head": index, "batch": SEQUENCING_BATCH, "head_id": HEAD_ID}
        )
        if advanced is None:
            return FeedHead(index, epoch)
        given, index = int(advanced) - index, int(advanced)
        if given < SEQUENCING_BATCH:
            return FeedHead(index, epoch)


# --- reading and pruning --------------------------------------------------------------


@dataclass(frozen=True)
class FeedPage:
    """The feed's last index and epoch when read, and the changes after
    ``since`` (at most ``limit``)."""

    index: int
    changes: list[dict[str, Any]]
    epoch: str


def gone(since: int, index: int) -> errors.ChangesGone:
    return errors.ChangesGone(
        f"The changes after index {since} are no longer available (or never were): re-read "
        f"the state you follow, then follow the feed from index {index}.",
        index=index,
    )


async def head(session: AsyncSession) -> FeedHead:
    """The feed's head as committed, read without a lock (a standby can answer)."""
    found = (
        await session.execute(
            select(ChangeFeedHead.last_index, ChangeFeedHead.epoch).where(
                ChangeFeedHead.id == HEAD_ID
            )
        )
    ).one_or_none()
    if found is None:
        return FeedHead(0, "")
    return FeedHead(int(found.last_index), str(found.epoch))


async def first_index(session: AsyncSession) -> int | None:
    """The oldest index still held (None when the feed holds nothing)."""
    found = await session.scalar(select(func.min(Change.feed_index)))
    return None if found is None else int(found)


def _render(row: Change) -> dict[str, Any]:
    return {
        "index": row.feed_index,
        "resource": row.resource,
        "action": row.action,
        "uuid": row.uuid,
        **row.details,
    }


async def read(session: AsyncSession, since: int, limit: int) -> FeedPage:
    """The changes after ``since``, in index order.

    The head is read first: every index up to it is committed with the
    head, so the changes read next run from ``since + 1`` without a hole
    unless pruning removed the start — then they are gone.
    """
    top = await head(session)
    if since > top.index:
        raise gone(since, top.index)
    if since == top.index:
        return FeedPage(top.index, [], top.epoch)
    rows = await session.scalars(
        select(Change)
        .where(Change.feed_index > since, Change.feed_index <= top.index)
        .order_by(Change.feed_index)
        .limit(limit)
    )
    found = list(rows)
    if not found or found[0].feed_index != since + 1:
        raise gone(since, top.index)
    return FeedPage(top.index, [_render(row) for row in found], top.epoch)


async def prune(session: AsyncSession, keep: int) -> int:
    """Remove all but the last ``keep`` changes; how many went. Entries not
    yet indexed cannot be counted among the last, so they are indexed first."""
    cutoff = (await sequence(session)).index - keep
    if cutoff <= 0:
        return 0
    result = await session.execute(delete(Change).where(Change.feed_index <= cutoff))
    return int(getattr(result, "rowcount", 0) or 0)
