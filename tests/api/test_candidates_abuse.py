"""Candidates requests whose combinations explode: a host of many children
and granular groups any child can serve. The answer stops at
``max_allocation_candidates``; a search past the request's deadline is cut
short with a 503 instead of running to its end."""

from __future__ import annotations

import time

import pytest

from placement_api.settings import Settings
from tests.support.client import PlacementClient, app_client
from tests.support.provider_trees import TreeBuilder


def exploding_query(groups: int, policy: str = "none") -> str:
    asked = "&".join(f"resources{g}=CUSTOM_UNIT:1" for g in range(1, groups + 1))
    return f"/allocation_candidates?{asked}&group_policy={policy}"


async def wide_host(api: PlacementClient, children: int) -> None:
    tree = TreeBuilder(api)
    await tree.provider("host")
    for index in range(children):
        await tree.provider(f"child{index}", parent="host", inventory={"CUSTOM_UNIT": 8})


async def test_the_default_cap_bounds_an_unlimited_request(api: PlacementClient) -> None:
    await wide_host(api, 16)
    # 16**4 = 65,536 combinations, every one a candidate.
    response = await api.get(exploding_query(4))
    assert response.status_code == 200, response.text
    assert len(response.json()["allocation_requests"]) == Settings().max_allocation_candidates
    response = await api.get(exploding_query(5) + "&limit=7")
    assert len(response.json()["allocation_requests"]) == 7


async def test_the_deadline_cuts_a_fruitless_search_short_with_a_503(
    settings: Settings, api: PlacementClient
) -> None:
    # Eleven isolated groups over ten children: no candidate, but millions of
    # branches to rule out (seconds of work), far past the deadline.
    await wide_host(api, 10)
    async with app_client(settings, request_timeout=0.3) as timed:
        started = time.monotonic()
        response = await timed.get(exploding_query(11, "isolate"))
        assert time.monotonic() - started < 1.5
        assert response.status_code == 503, response.text[:200]
        (error,) = response.json()["errors"]
        assert "did not finish within 0.3s" in error["detail"]
        assert response.headers["retry-after"]
        # The worker is free again: an ordinary request is answered.
        assert (await timed.get("/")).status_code == 200


@pytest.mark.parametrize("groups", [3])
async def test_a_search_within_its_deadline_is_whole(api: PlacementClient, groups: int) -> None:
    await wide_host(api, 4)
    response = await api.get(exploding_query(groups))
    assert len(response.json()["allocation_requests"]) == 4**groups
