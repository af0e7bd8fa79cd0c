import asyncio
from placement_api.domain import consumers, claims
from tests.db.test_allocation_concurrency import *  # noqa

async def test_probe(api, settings, monkeypatch, backend):
    calls = {"none": 0, "inflight": 0, "max": 0}
    orig_insert = consumers._insert_if_absent
    async def wrapped(*a, **k):
        r = await orig_insert(*a, **k)
        if r is None: calls["none"] += 1
        return r
    monkeypatch.setattr(consumers, "_insert_if_absent", wrapped)
    orig_lock = claims.lock_providers
    async def lock(*a, **k):
        calls["inflight"] += 1
        calls["max"] = max(calls["max"], calls["inflight"])
        try:
            return await orig_lock(*a, **k)
        finally:
            calls["inflight"] -= 1
    monkeypatch.setattr(claims, "lock_providers", lock)
    await test_old_writers_racing_on_one_new_consumer_are_serialised(api, settings)
    await test_claims_on_one_provider_stop_exactly_at_capacity(api, settings)
    print(backend, calls)
