"""What plugins may read from Placement while they prepare a request.

One object per scheduler, over its provider directory (names, trees,
aggregates, consumer counts, where consumers run) and its client. Heartbeats
are read through ``SchedulerPlacement.heartbeats`` when a plugin asks, and the
answer is reused for ``heartbeats_max_age`` seconds (the host cache's lifetime:
the same bound on how late the scheduler sees changes), one read at a time. A
reused answer still judges liveness at the current time (see ``heartbeats``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping

from scheduler.placement.client import ProviderRecord, SchedulerPlacement
from scheduler.placement.directory import ProviderDirectory
from scheduler.placement.heartbeats import Clock, HeartbeatSnapshot


class PlacementFacts:
    def __init__(
        self,
        client: SchedulerPlacement,
        directory: ProviderDirectory,
        *,
        heartbeats_max_age: float = 0.0,
        clock: Clock = time.monotonic,
    ) -> None:
        self._client = client
        self._directory = directory
        self._clock = clock
        self._heartbeats_max_age = heartbeats_max_age
        self._heartbeats: HeartbeatSnapshot | None = None
        self._reading_heartbeats = asyncio.Lock()

    async def providers(self, wanted: Iterable[str] = ()) -> Mapping[str, ProviderRecord]:
        return await self._directory.providers(wanted)

    async def uuid_named(self, name: str) -> str | None:
        return await self._directory.uuid_named(name)

    async def hosts_of_consumers(self, consumers: Iterable[str]) -> dict[str, set[str]]:
        return await self._directory.hosts_of_consumers(consumers)

    async def consumer_counts(self, hosts: list[str]) -> dict[str, int]:
        return await self._directory.consumer_counts(hosts)

    async def heartbeats(self) -> HeartbeatSnapshot:
        async with self._reading_heartbeats:  # concurrent requests share one read
            last = self._heartbeats
            if last is None or self._clock() - last.read_at > self._heartbeats_max_age:
                last = HeartbeatSnapshot.of(await self._client.heartbeats(), self._clock)
                self._heartbeats = last
            return last
