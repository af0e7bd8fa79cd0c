"""Provider facts the candidates answer lacks, read from Placement and cached.

- names and tree roots: ``GET /resource_providers`` (all of them, one call),
  refreshed when older than the cache time or when a provider is unknown;
- aggregate membership, only for aggregates named in ``settings.aggregates``:
  ``GET /resource_providers?member_of=<aggregate>`` per aggregate; the
  aggregate's configured availability zone and metadata then apply to its
  members;
- consumer counts per host, only when an enabled plugin needs them: the
  distinct consumers of ``GET /resource_providers/{uuid}/allocations`` of every
  provider of the host's tree (its NUMA children too), cached, and kept
  current for the claims and releases this scheduler makes itself;
- where consumers run: ``GET /allocations/{consumer}``, mapped to roots.

While the host cache follows the change feed it passes each page on
(``apply``): names, trees and memberships are updated from the entries,
counts of the hosts a write touched are dropped (read again when needed),
and nothing expires on the clock; a gap in the feed drops everything.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TypeVar

from flavors.aggregates import AggregateConfig
from scheduler.placement.client import ProviderRecord, SchedulerPlacement
from scheduler.placement.feed_effects import Effects
from scheduler.placement.host_state import HostMetadata

T = TypeVar("T")
Clock = Callable[[], float]


class ProviderDirectory:
    def __init__(
        self,
        client: SchedulerPlacement,
        aggregates: Mapping[str, AggregateConfig],
        *,
        default_availability_zone: str = "nova",
        cache_seconds: float = 60.0,
        concurrency: int = 16,
        clock: Clock = time.monotonic,
    ) -> None:
        self._client = client
        self._aggregates = dict(aggregates)
        self._default_az = default_availability_zone
        self._ttl = cache_seconds
        self._clock = clock
        self._limit = asyncio.Semaphore(concurrency)
        self._providers: dict[str, ProviderRecord] = {}
        self._providers_at: float | None = None
        self._members: dict[str, frozenset[str]] = {}
        self._members_at: float | None = None
        self._counts: dict[str, tuple[int, float]] = {}
        self._live = False  # kept current by the change feed: no expiry

    def _stale(self, at: float | None) -> bool:
        return at is None or (not self._live and self._clock() - at > self._ttl)

    def apply(self, effects: Effects) -> None:
        """A page of the change feed: the directory is current with it."""
        for uuid, facts in effects.providers.items():
            if facts is None:
                self._providers.pop(uuid, None)
                continue
            generation = self._providers[uuid].generation if uuid in self._providers else 0
            self._providers[uuid] = ProviderRecord(
                uuid=uuid,
                name=facts.name,
                generation=generation,
                parent_provider_uuid=facts.parent_uuid,
                root_provider_uuid=facts.root_uuid,
            )
        for uuid, aggregates in effects.aggregates.items():
            self._members = {
                aggregate: members | {uuid} if aggregate in aggregates else members - {uuid}
                for aggregate, members in self._members.items()
            }
        for provider in effects.used:
            record = self._providers.get(provider)
            self._counts.pop(record.root_provider_uuid if record else provider, None)

    def following(self, live: bool) -> None:
        self._live = live

    def forget(self) -> None:
        """Changes were missed: read everything again when next needed."""
        self._providers_at = self._members_at = None
        self._counts.clear()

    async def providers(self, wanted: Iterable[str] = ()) -> Mapping[str, ProviderRecord]:
        """All providers; re-read when stale or when one of ``wanted`` is unknown."""
        if self._stale(self._providers_at) or any(u not in self._providers for u in wanted):
            records = await self._client.providers()
            self._providers = {record.uuid: record for record in records}
            self._providers_at = self._clock()
        return self._providers

    async def uuid_named(self, name: str) -> str | None:
        for attempt in range(2):
            if attempt:
                self._providers_at = None
            found = [r.uuid for r in (await self.providers()).values() if r.name == name]
            if found:
                return found[0]
        return None

    async def metadata(self, hosts: list[str], *, with_counts: bool) -> dict[str, HostMetadata]:
        records = await self.providers(hosts)
        memberships = await self._memberships()
        counts = await self.consumer_counts(hosts) if with_counts else {}
        return {
            host: self._describe(host, records, memberships, counts.get(host)) for host in hosts
        }

    def _describe(
        self,
        host: str,
        records: Mapping[str, ProviderRecord],
        memberships: Mapping[str, frozenset[str]],
        count: int | None,
    ) -> HostMetadata:
        aggregates = sorted(a for a, members in memberships.items() if host in members)
        zones = [z for a in aggregates if (z := self._aggregates[a].availability_zone)]
        metadata: dict[str, set[str]] = {}
        for aggregate in aggregates:
            for key, value in self._aggregates[aggregate].metadata.items():
                metadata.setdefault(key, set()).add(value)
        record = records.get(host)
        return HostMetadata(
            name=record.name if record else host,
            aggregates=frozenset(aggregates),
            availability_zone=zones[0] if zones else self._default_az,
            aggregate_metadata={key: frozenset(values) for key, values in metadata.items()},
            num_instances=count,
        )

    async def _memberships(self) -> Mapping[str, frozenset[str]]:
        if self._aggregates and self._stale(self._members_at):
            aggregates = list(self._aggregates)
            found = await self._gather(self._client.providers_in_aggregate(a) for a in aggregates)
            self._members = {a: frozenset(m) for a, m in zip(aggregates, found, strict=True)}
            self._members_at = self._clock()
        return self._members

    async def consumer_counts(self, hosts: list[str]) -> dict[str, int]:
        """Distinct consumers with allocations anywhere in each host's tree."""
        stale = [h for h in hosts if h not in self._counts or self._stale(self._counts[h][1])]
        fetched = await self._gather(self._count_tree(h) for h in stale)
        now = self._clock()
        for host, count in zip(stale, fetched, strict=True):
            self._counts[host] = (count, now)
        return {h: self._counts[h][0] for h in hosts}

    async def _count_tree(self, host: str) -> int:
        records = await self.providers([host])
        tree = [uuid for uuid, r in records.items() if r.root_provider_uuid == host] or [host]
        found = await asyncio.gather(*(self._client.consumers_on(uuid) for uuid in tree))
        return len(set().union(*found))

    def note_consumer(self, host: str, change: int) -> None:
        """Keep a cached count current for a claim (+1) or release (-1) made here."""
        if host in self._counts:
            count, at = self._counts[host]
            self._counts[host] = (max(0, count + change), at)

    async def hosts_of_consumers(self, consumers: Iterable[str]) -> dict[str, set[str]]:
        """host (root provider) uuid -> the given consumers with allocations there."""
        wanted = list(dict.fromkeys(consumers))
        allocations = await self._gather(self._client.consumer_allocations(c) for c in wanted)
        providers = {rp for found in allocations for rp in found}
        records = await self.providers(providers)
        hosts: dict[str, set[str]] = {}
        for consumer, found in zip(wanted, allocations, strict=True):
            for rp in found:
                root = records[rp].root_provider_uuid if rp in records else rp
                hosts.setdefault(root, set()).add(consumer)
        return hosts

    async def _gather(self, calls: Iterable[Awaitable[T]]) -> list[T]:
        async def limited(call: Awaitable[T]) -> T:
            async with self._limit:
                return await call

        return list(await asyncio.gather(*(limited(call) for call in calls)))
