"""Comparing the provider index's answers with the database path's: one
database served through two apps (the index as shipped, and an app with
``candidates_index`` off), random requests over random clouds, answers
compared byte for byte at several microversions."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
from httpx import ASGITransport, AsyncClient
from prometheus_client import REGISTRY

from placement_api.app import create_app
from placement_api.domain.candidates.provider_index import ProviderIndex
from placement_api.settings import Settings
from tests.support.client import PlacementClient, app_client
from tests.support.provider_trees import TreeBuilder

TRAITS = ["HW_CPU_X86_AVX2", "HW_CPU_X86_SSE", "CUSTOM_GPU", "COMPUTE_STATUS_DISABLED"]
AGGREGATES = ["a", "b", "c"]
VERSIONS = ["1.39", "1.29", "1.17", "1.10"]


def answered(source: str) -> float:
    """Candidates requests answered so far by ``source`` (index or database)."""
    value = REGISTRY.get_sample_value(
        "placement_allocation_candidates_answered_total", {"source": source}
    )
    return value or 0.0


@asynccontextmanager
async def indexed_app(settings: Settings) -> AsyncIterator[tuple[PlacementClient, ProviderIndex]]:
    """An admin client over an app with the index, and its index."""
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        index = app.state.services.candidates_index
        async with AsyncClient(transport=ASGITransport(app=app), base_url="http://p") as http:
            yield PlacementClient(http), index


@asynccontextmanager
async def database_only(settings: Settings) -> AsyncIterator[PlacementClient]:
    async with app_client(settings, candidates_index=False) as client:
        yield client


def random_queries(
    rng: random.Random, tree: TreeBuilder, count: int, roots: Sequence[str]
) -> list[str]:
    """Requests of one unsuffixed group; ``in_tree`` names one of ``roots``."""
    queries = []
    for _ in range(count):
        resources = {"VCPU": rng.choice([1, 2, 5, 12]), "MEMORY_MB": rng.choice([256, 300, 2048])}
        if rng.random() < 0.15:
            # Sharing providers alone may serve it, to trees of their own aggregates.
            resources = {}
        if not resources or rng.random() < 0.5:
            resources["DISK_GB"] = rng.choice([10, 450])
        parts = ["resources=" + ",".join(f"{k}:{v}" for k, v in resources.items())]
        if rng.random() < 0.4:
            parts.append("required=" + rng.choice(["HW_CPU_X86_AVX2", "!CUSTOM_GPU"]))
        if rng.random() < 0.2:
            parts.append("required=in:HW_CPU_X86_SSE,CUSTOM_GPU")
        if rng.random() < 0.3:
            parts.append("member_of=" + tree.aggregate(rng.choice(AGGREGATES)))
        if rng.random() < 0.15:
            parts.append("member_of=!" + tree.aggregate(rng.choice(AGGREGATES)))
        if rng.random() < 0.15:
            parts.append("root_required=!COMPUTE_STATUS_DISABLED")
        if rng.random() < 0.1:
            parts.append("in_tree=" + tree.uuids[rng.choice(roots)])
        if rng.random() < 0.6:
            parts.append(f"limit={rng.choice([1, 3, 10])}")
        queries.append("/allocation_candidates?" + "&".join(parts))
    return queries


def _details(body: dict[str, Any]) -> list[str]:
    return [error["detail"] for error in body["errors"]]


async def same_answers(api: PlacementClient, database: PlacementClient, queries: list[str]) -> None:
    """Each query gets the same status and body from both, at every version
    that has its parameters."""
    for query in queries:
        for version in VERSIONS:
            if version < "1.21" and "member_of" in query:
                continue
            if version < "1.29" and ("in_tree" in query or "root_required" in query):
                continue
            if version < "1.39" and "in:" in query:
                continue
            indexed = await api.get(query, version=version)
            read = await database.get(query, version=version)
            assert indexed.status_code == read.status_code, (query, version, indexed.text)
            if read.status_code == 200:
                assert indexed.content == read.content, (query, version)
            else:
                assert _details(indexed.json()) == _details(read.json()), (query, version)


@pytest.fixture(name="settings", params=["index", "database"])
def settings_of_both_paths(settings: Settings, request: pytest.FixtureRequest) -> Settings:
    """The suite's settings with the provider index on (as shipped) and off,
    for a module whose requests both paths must answer alike."""
    return settings.model_copy(update={"candidates_index": request.param == "index"})


async def same_answers_after_each(
    api: PlacementClient,
    database: PlacementClient,
    queries: list[str],
    writes: Sequence[Callable[[], Awaitable[object]]],
    more_queries: Callable[[], list[str]],
) -> None:
    """``same_answers`` before the writes and after each, with a few more
    queries (``more_queries()``) each time."""
    await same_answers(api, database, queries)
    for write in writes:
        await write()
        await same_answers(api, database, [*queries, *more_queries()])
