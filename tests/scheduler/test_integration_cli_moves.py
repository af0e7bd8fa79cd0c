"""The CLI's dry run, move, confirm and revert against a real scheduler process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from scheduler.request.move import migration_uuid
from tests.scheduler.live import Cloud, LivePlacement, new_uuid
from tests.scheduler.processes import SchedulerProcess, schedulers

pytestmark = pytest.mark.parametrize("live_placement", ["sqlite"], indirect=True)


@pytest.fixture
def scheduler(live_placement: LivePlacement) -> Iterator[SchedulerProcess]:
    with schedulers(live_placement.url, 1) as (started,):
        yield started


def cli(scheduler: SchedulerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200", PLACEMENT_SCHEDULER_URL=scheduler.url)
    return subprocess.run(
        [sys.executable, "-m", "scheduler", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


async def test_dry_run_then_move_confirm_and_revert_from_the_command_line(
    cloud: Cloud, scheduler: SchedulerProcess
) -> None:
    source = await cloud.host("source", vcpu=4)
    other = await cloud.host("other", vcpu=8)
    consumer = new_uuid()
    await cloud.allocate(consumer, source, {"VCPU": 2})

    dry = cli(scheduler, "schedule", "--vcpus", "1", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "dry run: nothing was claimed" in dry.stdout
    assert (await cloud.usages(other))["VCPU"] == 0

    moved = cli(scheduler, "move", consumer, "--kind", "migrate")
    assert moved.returncode == 0, moved.stderr
    assert f"moves to other ({other})" in moved.stdout
    assert await cloud.allocations(migration_uuid(consumer)) == {source: {"VCPU": 2}}
    reverted = cli(scheduler, "revert", consumer)
    assert reverted.returncode == 0, reverted.stderr
    assert await cloud.allocations(consumer) == {source: {"VCPU": 2}}

    assert cli(scheduler, "move", consumer, "--kind", "live-migrate").returncode == 0
    confirmed = cli(scheduler, "confirm", consumer)
    assert confirmed.returncode == 0, confirmed.stderr
    assert f"confirmed; it holds allocations on {other}" in confirmed.stdout
    assert await cloud.allocations(migration_uuid(consumer)) == {}
    again = cli(scheduler, "confirm", consumer)
    assert again.returncode == 1
    assert "scheduler.no_move" in again.stderr
