"""The two moves, end to end: read, check, write in one transaction, verify.

Reading happens before the target's transaction opens, so the target is
locked only while it is written. A verification that fails raises, which
rolls the whole write back.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from sqlalchemy import Connection

from placement_api.db import migrations
from placement_api.db.engine import WRITE_OPTION, create_engine
from placement_api.migration.census import Census, kept_usage_problems, take_census
from placement_api.migration.ours_source import read_ours
from placement_api.migration.ours_target import write_ours
from placement_api.migration.problems import MigrationError, Problem, find_problems
from placement_api.migration.progress import Phases
from placement_api.migration.reaching import reaching
from placement_api.migration.snapshot import Snapshot
from placement_api.migration.upstream_db import require_upstream_schema, upstream_engine
from placement_api.migration.upstream_source import read_upstream
from placement_api.migration.upstream_target import write_upstream


@dataclass
class MovePlan:
    """What a move would write, what it cannot, and why the target refuses, if it does."""

    snapshot: Snapshot
    census: Census
    problems: list[Problem] = field(default_factory=list)
    target_refusal: str | None = None


def plan_import(source_url: str, target_url: str, phases: Phases) -> MovePlan:
    with reaching(source_url, "source"):
        engine = upstream_engine(source_url)
        try:
            require_upstream_schema(engine)
            with engine.connect().execution_options(isolation_level="REPEATABLE READ") as source:
                snapshot, problems = read_upstream(source, phases)
                census = take_census(source)
        finally:
            engine.dispose()
    plan = MovePlan(snapshot, census, [*problems, *find_problems(snapshot)])
    with reaching(target_url, "target"):
        plan.target_refusal = asyncio.run(_ours_refusal(target_url))
    return plan


def run_import(plan: MovePlan, target_url: str, phases: Phases) -> None:
    _require_movable(plan)
    with reaching(target_url, "target"):
        asyncio.run(_write_into_ours(plan, target_url, phases))


def plan_export(source_url: str, target_url: str, phases: Phases) -> MovePlan:
    with reaching(source_url, "source"):
        snapshot, census = asyncio.run(_read_from_ours(source_url, phases))
    plan = MovePlan(snapshot, census, find_problems(snapshot))
    with reaching(target_url, "target"):
        engine = upstream_engine(target_url)
        try:
            require_upstream_schema(engine)
            with engine.connect() as target:
                plan.target_refusal = _refusal(take_census(target))
        finally:
            engine.dispose()
    return plan


def run_export(plan: MovePlan, target_url: str, phases: Phases) -> None:
    _require_movable(plan)
    with reaching(target_url, "target"):
        engine = upstream_engine(target_url)
        try:
            with engine.begin() as target:
                _refuse_unless_empty(target)
                write_upstream(target, plan.snapshot, phases)
                _verify(plan.census, take_census(target))
        finally:
            engine.dispose()


def _require_movable(plan: MovePlan) -> None:
    if plan.problems:
        raise MigrationError(f"{len(plan.problems)} rows cannot be moved; see them with --dry-run")
    if plan.target_refusal:
        raise MigrationError(plan.target_refusal)


def _refusal(census: Census) -> str | None:
    if census.is_empty():
        return None
    held = ", ".join(f"{count} {name}" for name, count in census.counts.items() if count)
    return f"the target database is not empty ({held})"


def _refuse_unless_empty(connection: Connection) -> None:
    refusal = _refusal(take_census(connection))
    if refusal:
        raise MigrationError(refusal)


def _verify(expected: Census, actual: Census) -> None:
    differences = expected.differences(actual)
    if differences:
        raise MigrationError("after writing, the target differs: " + "; ".join(differences))


async def _ours_refusal(url: str) -> str | None:
    if await migrations.current_revision(url) != migrations.head_revision(url):
        return "the target database is not migrated: run `placement-api db upgrade` first"
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            return _refusal(await connection.run_sync(take_census))
    finally:
        await engine.dispose()


async def _write_into_ours(plan: MovePlan, url: str, phases: Phases) -> None:
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            await connection.execution_options(**{WRITE_OPTION: True})
            async with connection.begin():
                await connection.run_sync(_refuse_unless_empty)
                await connection.run_sync(write_ours, plan.snapshot, phases)
                _verify(plan.census, await connection.run_sync(take_census))
                kept = await connection.run_sync(kept_usage_problems)
                if kept:
                    raise MigrationError("after writing: " + "; ".join(kept))
    finally:
        await engine.dispose()


async def _read_from_ours(url: str, phases: Phases) -> tuple[Snapshot, Census]:
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            if connection.dialect.name == "postgresql":
                # One snapshot for every read, as upstream's source gets.
                await connection.execution_options(isolation_level="REPEATABLE READ")
            await connection.begin()
            snapshot = await connection.run_sync(read_ours, phases)
            return snapshot, await connection.run_sync(take_census)
    finally:
        await engine.dispose()
