"""What a transaction records reads back as it was queued, whether it is
one entry (PostgreSQL sends it as plain parameters) or several (one JSON
array): same fields, same order, consecutive indexes, text kept exactly."""

from __future__ import annotations

from sqlalchemy import func, select

from placement_api.db.models import Change
from placement_api.db.session import SessionFactory, unit_of_work
from placement_api.domain import changes, feed_index

# Quotes, a backslash, a JSON-looking string and text beyond ASCII: kept as written.
AWKWARD = 'CUSTOM_\'q\'"dq"\\ {"not": [json]} ünï 💡'


async def _head(factory: SessionFactory) -> int:
    """The feed's head after a sequencing run (a write on PostgreSQL only)."""
    on_postgresql = factory.kw["bind"].dialect.name == "postgresql"
    async with unit_of_work(factory, write=on_postgresql) as session:
        return (await feed_index.sequence(session)).index


async def _read_after(factory: SessionFactory, since: int) -> list[dict[str, object]]:
    await _head(factory)
    async with unit_of_work(factory, write=False) as session:
        return (await feed_index.read(session, since, 100)).changes


async def test_one_entry_and_several_read_back_as_queued(factory: SessionFactory) -> None:
    start = await _head(factory)
    async with unit_of_work(factory, write=True) as session:
        changes.resource_class_changed(session, changes.CREATED, AWKWARD)
    async with unit_of_work(factory, write=True) as session:
        changes.resource_class_changed(session, changes.UPDATED, "CUSTOM_A", "CUSTOM_B")
        changes.trait_changed(session, changes.DELETED, AWKWARD)
        changes.provider_traits_changed(session, "a-provider", 4, ["Z", AWKWARD, "A"])
    found = await _read_after(factory, start)
    assert found == [
        {
            "index": start + 1,
            "resource": "resource_class",
            "action": "created",
            "uuid": AWKWARD,
            "name": AWKWARD,
        },
        {
            "index": start + 2,
            "resource": "resource_class",
            "action": "updated",
            "uuid": "CUSTOM_A",
            "name": "CUSTOM_B",
        },
        {
            "index": start + 3,
            "resource": "trait",
            "action": "deleted",
            "uuid": AWKWARD,
            "name": AWKWARD,
        },
        {
            "index": start + 4,
            "resource": "trait",
            "action": "updated",
            "uuid": "a-provider",
            "generation": 4,
            "traits": sorted(["Z", AWKWARD, "A"]),
        },
    ]


async def test_one_transactions_entries_share_its_commit_sequence(
    factory: SessionFactory,
) -> None:
    start = await _head(factory)
    async with unit_of_work(factory, write=True) as session:
        changes.trait_changed(session, changes.CREATED, "CUSTOM_ALONE")
    async with unit_of_work(factory, write=True) as session:
        for number in range(3):
            changes.trait_changed(session, changes.CREATED, f"CUSTOM_TOGETHER_{number}")
    await _head(factory)
    async with unit_of_work(factory, write=False) as session:
        rows = await session.execute(
            select(
                Change.commit_seq, func.count(), func.min(Change.ordinal), func.max(Change.ordinal)
            )
            .where(Change.feed_index > start)
            .group_by(Change.commit_seq)
            .order_by(Change.commit_seq)
        )
        assert [tuple(row)[1:] for row in rows] == [(1, 0, 0), (3, 0, 2)]
