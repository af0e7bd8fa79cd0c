"""On PostgreSQL a one-consumer claim's change is inserted by the statement
that applies it (``claim_sql``), its numbers filled in by the database.
It must be, to the byte, the entry ``claim_changes.allocations_changed`` builds
from the same write: new consumers, moves, releases, several providers and
classes. And the commit still counts as recording: waiting readers wake."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import cast

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.db.session import SessionFactory, unit_of_work
from placement_api.domain import changes, claim_changes, claims
from placement_api.domain.consumers import ConsumerClaim
from tests.api.allocation_helpers import PROJECT, USER, new_uuid, provider_with, put_allocations
from tests.api.changes_helpers import latest_index
from tests.support.client import AppClients, PlacementClient

Entry = tuple[str, str, str, str]
_LAST_OF = text(
    "SELECT resource, action, uuid, details::text FROM changes "
    "WHERE uuid = :uuid ORDER BY commit_seq DESC LIMIT 1"
)


def _built_in_python(
    plan: claims.ClaimPlan, usage_after: dict[claims.Slot, int], generations: dict[int, int]
) -> list[Entry]:
    """What the queued path would append (``changes._append_on_postgresql``)."""
    stub = cast(AsyncSession, SimpleNamespace(info={}))
    claim_changes.allocations_changed(stub, plan, usage_after, generations)
    return [
        (entry.resource, entry.action, entry.uuid, json.dumps(entry.details, separators=(",", ":")))
        for entry in stub.info[changes._PENDING]
    ]


async def _claim(factory: SessionFactory, claim: ConsumerClaim) -> tuple[Entry, Entry]:
    """The entry the write's statement inserted (read back before the commit,
    so the commit's append could not have written it) and the one built in
    Python for the same write."""
    async with unit_of_work(factory, write=True) as session:
        plan = await claims.prepare(session, [claim], failure="Unable to allocate")
        usage_after, generations = await claims.write(
            session, plan, lock_and_bump=True, record=True
        )
        assert changes._PENDING not in session.info
        row = (await session.execute(_LAST_OF, {"uuid": claim.uuid})).one()
        (expected,) = _built_in_python(plan, usage_after, generations)
    return (row[0], row[1], row[2], row[3]), expected


async def test_the_statements_entry_is_the_one_python_builds(
    api: PlacementClient, factory: SessionFactory, backend: str
) -> None:
    if backend != "postgresql":
        pytest.skip("SQLite's claims queue their change for the commit")
    assert (await api.put("/resource_classes/CUSTOM_GPU")).status_code == 201
    big = {"total": 1000, "max_unit": 1000}
    rps = [
        await provider_with(api, {name: big for name in ("VCPU", "MEMORY_MB", "CUSTOM_GPU")})
        for _ in range(3)
    ]
    first, second = new_uuid(), new_uuid()

    def claim(
        uuid: str, allocations: dict[str, dict[str, int]], generation: int | None = None
    ) -> ConsumerClaim:
        return ConsumerClaim(
            uuid,
            allocations,
            project_id=PROJECT,
            user_id=USER,
            generation=generation,
            check_generation=generation is not None,
        )

    steps = [
        claim(first, {rps[0]: {"VCPU": 2, "MEMORY_MB": 50}, rps[1]: {"CUSTOM_GPU": 1}}),
        claim(second, {rps[0]: {"VCPU": 1}, rps[2]: {"MEMORY_MB": 64, "CUSTOM_GPU": 2}}),
        # A move: off one provider, onto another, a class dropped and one added.
        claim(first, {rps[1]: {"CUSTOM_GPU": 1, "VCPU": 4}, rps[2]: {"VCPU": 1}}, generation=1),
        claim(first, {rps[1]: {"CUSTOM_GPU": 1, "VCPU": 4}, rps[2]: {"VCPU": 1}}, generation=2),
        claim(second, {}, generation=1),  # released
    ]
    actions = []
    for step in steps:
        written, built = await _claim(factory, step)
        assert written == built
        actions.append(written[1])
    assert actions == ["created", "created", "updated", "updated", "deleted"]


@pytest.fixture
async def slow_poll_api(apps: AppClients) -> AsyncIterator[PlacementClient]:
    """A client of an app whose waiting readers re-read the feed only once a
    minute: only the wake-up of a recording commit ends their wait early."""
    async with apps(changes_poll_interval=60.0) as client:
        yield client


async def test_a_claim_whose_statement_recorded_it_wakes_waiting_readers(
    slow_poll_api: PlacementClient,
) -> None:
    api = slow_poll_api
    rp = await provider_with(api, {"VCPU": {"total": 4}})
    since = await latest_index(api)
    waiting = asyncio.create_task(api.get(f"/changes?since={since}&wait=50"))
    await asyncio.sleep(0.5)
    consumer = new_uuid()
    assert (await put_allocations(api, consumer, {rp: {"VCPU": 1}})).status_code == 204
    # Bounds a hang only: a reader left to its minute-long re-read fails here.
    body = (await asyncio.wait_for(waiting, 20)).json()
    assert [c["uuid"] for c in body["changes"]] == [consumer]
