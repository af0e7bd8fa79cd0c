"""A claim that waits for a provider's lock decides on the inventory as the
holder of the lock committed it.

On PostgreSQL a claim locks its providers and checks capacity in one
statement, whose snapshot predates the wait; the capacity rule must still
be evaluated on the inventory row as it is once the lock is granted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest
from httpx import Response
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from placement_api.db.engine import create_engine
from placement_api.db.session import SessionFactory, unit_of_work
from placement_api.domain import providers
from placement_api.settings import Settings
from tests.api.allocation_helpers import error, new_uuid, provider_with, put_allocations, usages
from tests.api.changes_helpers import changes_after, latest_index
from tests.db.allocation_state import consumers_without_allocations, orphan_allocations
from tests.support.client import PlacementClient

# Bounds the wait for the claim to queue on the lock, not a timing assertion.
_QUEUE_WAIT_SECONDS = 30.0


async def _until_a_session_waits_for_a_lock(watcher: AsyncConnection) -> None:
    waiting = text(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
    )
    async with asyncio.timeout(_QUEUE_WAIT_SECONDS):
        while True:
            if (await watcher.execute(waiting)).scalar_one():
                return
            await asyncio.sleep(0.01)


async def _claim_while_locked(
    api: PlacementClient,
    settings: Settings,
    rp: str,
    consumer: str,
    wanted: dict[str, int],
    statements: list[str],
    values: Mapping[str, object],
) -> Response:
    """Hold ``rp``'s row lock, start a claim of ``wanted`` by ``consumer`` that queues on it,
    run ``statements`` in the lock holder's transaction and commit: the
    claim's answer."""
    engine = create_engine(settings.database_url)
    try:
        async with engine.connect() as holder, engine.connect() as watcher:
            await watcher.execution_options(isolation_level="AUTOCOMMIT")
            transaction = await holder.begin()
            await holder.execute(
                text("SELECT id FROM resource_providers WHERE uuid = :uuid FOR UPDATE"),
                {"uuid": rp},
            )
            claim = asyncio.create_task(put_allocations(api, consumer, {rp: wanted}))
            await _until_a_session_waits_for_a_lock(watcher)
            for statement in statements:
                await holder.execute(text(statement), values)
            await transaction.commit()
            return await claim
    finally:
        await engine.dispose()


_PROVIDER = "(SELECT id FROM resource_providers WHERE uuid = :uuid)"
_LOWER_VCPU = f"UPDATE inventories SET total = :total WHERE resource_provider_id = {_PROVIDER}"
_ADD_MEMORY = (
    "INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, "
    "min_unit, max_unit, step_size, allocation_ratio, used) "
    f"SELECT {_PROVIDER}, id, :total, 0, 1, :total, 1, 1.0, 0 FROM resource_classes "
    "WHERE name = 'MEMORY_MB'"
)


@pytest.mark.parametrize(
    ("change", "total", "wanted", "fits"),
    [
        (_LOWER_VCPU, 1, {"VCPU": 2}, False),
        (_LOWER_VCPU, 3, {"VCPU": 2}, True),
        # Not in the snapshot of the statement that waited: seen all the same.
        (_ADD_MEMORY, 512, {"VCPU": 2, "MEMORY_MB": 256}, True),
        (_ADD_MEMORY, 128, {"VCPU": 2, "MEMORY_MB": 256}, False),
    ],
)
async def test_a_waiting_claim_sees_the_inventory_its_lock_holder_committed(
    api: PlacementClient,
    settings: Settings,
    backend: str,
    change: str,
    total: int,
    wanted: dict[str, int],
    fits: bool,
) -> None:
    if backend != "postgresql":
        pytest.skip("SQLite has one writer at a time: a claim never waits inside a statement")
    rp = await provider_with(api, {"VCPU": {"total": 4}})
    consumer = new_uuid()
    since = await latest_index(api)
    values = {"total": total, "uuid": rp}
    response = await _claim_while_locked(api, settings, rp, consumer, wanted, [change], values)
    found = await usages(api, rp)
    # The change the claim's statement writes, or (an inventory it did not
    # see: applied again after it) the one queued for the commit; none if refused.
    recorded = [c for c in await changes_after(api, since) if c["uuid"] == consumer]
    if fits:
        assert response.status_code == 204, response.text
        assert found == wanted
        assert [(c["action"], c["usages"]) for c in recorded] == [("created", {rp: wanted})]
    else:
        assert response.status_code == 409, response.text
        assert error(response)["conflict"] == "capacity"
        assert set(found.values()) == {0}
        assert recorded == []


async def test_a_claim_that_waited_for_a_writer_records_after_it(
    api: PlacementClient, factory: SessionFactory, settings: Settings, backend: str
) -> None:
    """The claim's statement inserts its change (``claim_sql``): the commit
    sequence it takes must come after its lock waits, so after the change of
    the writer it waited for, which that writer appends as it commits."""
    if backend != "postgresql":
        pytest.skip("SQLite has one writer at a time: a claim never waits inside a statement")
    rp = await provider_with(api, {"VCPU": {"total": 4}})
    consumer = new_uuid()
    since = await latest_index(api)
    engine = create_engine(settings.database_url)
    try:
        async with engine.connect() as watcher:
            await watcher.execution_options(isolation_level="AUTOCOMMIT")
            async with unit_of_work(factory, write=True) as session:
                await providers.update_provider(
                    session,
                    rp,
                    name="renamed",
                    parent_uuid=None,
                    parent_given=False,
                    may_reparent=False,
                )
                claim = asyncio.create_task(put_allocations(api, consumer, {rp: {"VCPU": 1}}))
                await _until_a_session_waits_for_a_lock(watcher)
            response = await claim
    finally:
        await engine.dispose()
    assert response.status_code == 204, response.text
    order = [
        (c["resource"], c["uuid"])
        for c in await changes_after(api, since)
        if c["uuid"] in (rp, consumer)
    ]
    assert order == [("resource_provider", rp), ("allocation", consumer)]


# What a provider or class delete does once nothing refuses it (no allocation,
# no inventory of the class): its rows go, in the lock holder's transaction.
_DELETE_PROVIDER = "DELETE FROM resource_providers WHERE uuid = :uuid"
_DELETE_CLASS = (
    f"DELETE FROM inventories WHERE resource_provider_id = {_PROVIDER} "
    "AND resource_class_id = (SELECT id FROM resource_classes WHERE name = :name); "
    "DELETE FROM resource_classes WHERE name = :name"
)


@pytest.mark.parametrize(
    ("removal", "status", "detail"),
    [
        (_DELETE_PROVIDER, 400, "does not exist"),
        (_DELETE_CLASS, 409, "invalid"),
    ],
)
async def test_a_claim_waiting_on_what_is_deleted_writes_nothing(
    api: PlacementClient,
    settings: Settings,
    backend: str,
    removal: str,
    status: int,
    detail: str,
) -> None:
    """No foreign key refuses the claim's rows (migration 0006): the provider
    lock it waited for does. It answers as if the delete had come first."""
    if backend != "postgresql":
        pytest.skip("SQLite has one writer at a time: a claim never waits inside a statement")
    assert (await api.put("/resource_classes/CUSTOM_GONE")).status_code == 201
    rp = await provider_with(api, {"CUSTOM_GONE": {"total": 4}, "VCPU": {"total": 4}})
    wanted = {"CUSTOM_GONE": 1, "VCPU": 1}
    values = {"uuid": rp, "name": "CUSTOM_GONE"}
    statements = removal.split("; ")
    response = await _claim_while_locked(api, settings, rp, new_uuid(), wanted, statements, values)
    assert response.status_code == status, response.text
    assert detail in error(response)["detail"]
    assert await orphan_allocations(settings) == []
    assert await consumers_without_allocations(settings) == []
