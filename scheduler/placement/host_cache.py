"""Host states kept between decisions: one GET /allocation_candidates per request shape.

As in Nova's HostManager or the Kubernetes scheduler's cache, decisions are
computed in memory from state read earlier. Each distinct candidates query
(the request's *shape*: amounts, traits, aggregates, tree, limit) keeps the
host states built from its last answer, and reads Placement again when

- the answer is older than its lifetime: ``ttl`` seconds
  (``host_cache_seconds``) less up to a fifth at random, so schedulers that
  started together do not all read again at the same moment;
- Placement refused a claim (409) on one of its hosts: this scheduler's view
  of that host was stale, so the host is left out of every answer read
  before the refusal, and the next decision of that shape reads again;
- the caller needs an answer read after a given point (``reads_started``):
  a request is only refused (no valid host) on candidates read for it (see
  ``engine``).

Usage is one ``UsageBook`` for every shape: a claim made through one shape is
seen by the others, and each answer refreshes the providers it summarises.
Nothing here decides correctness. Placement's claim (``PUT /allocations``
with ``consumer_generation: null``) is atomic and refuses whatever no longer
fits, so a stale cache costs a retry on the next host, never an overcommit.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from scheduler.placement.client import SchedulerPlacement
from scheduler.placement.directory import ProviderDirectory
from scheduler.placement.host_state import HostState, UsageBook, build_hosts, requests_by_host

Shape = tuple[tuple[str, str], ...]
Clock = Callable[[], float]
JITTER = 0.2


@dataclass(frozen=True)
class CandidateView:
    """What one decision starts from: its own list of the cached host states."""

    hosts: list[HostState]
    allocation_requests: int
    hosts_found: int
    read: int  # the number of the read, see ``HostCache.reads_started``
    fetched_at: float
    names: dict[str, str]  # host uuid -> name, for every host of the answer (shared)


@dataclass
class _Entry:
    hosts: list[HostState]
    allocation_requests: int
    read: int
    fetched_at: float
    expires_at: float
    names: dict[str, str]
    uuids: frozenset[str] = field(default_factory=frozenset)
    stale: bool = False


class HostCache:
    def __init__(
        self,
        client: SchedulerPlacement,
        directory: ProviderDirectory,
        *,
        ttl: float,
        shapes: int,
        clock: Clock = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self._client = client
        self._directory = directory
        self._ttl = ttl
        self._shapes = shapes
        self._clock = clock
        self._rng = rng or random.Random()
        self._book = UsageBook({})
        self._entries: OrderedDict[Shape, _Entry] = OrderedDict()
        self._reading: dict[Shape, asyncio.Lock] = {}
        self._reads = 0
        # host -> reads started before Placement refused a claim on it
        self._lost: dict[str, int] = {}

    def now(self) -> float:
        return self._clock()

    @property
    def reads_started(self) -> int:
        return self._reads

    async def view(
        self, query: Sequence[tuple[str, str]], *, read_after: int | None = None
    ) -> CandidateView:
        """The hosts for this query; read from Placement unless a usable answer is
        cached. ``read_after``: only an answer whose read started after that many
        reads had started will do."""
        shape = tuple(query)
        entry = self._entries.get(shape)
        if not self._usable(entry, read_after):
            lock = self._reading.setdefault(shape, asyncio.Lock())
            async with lock:  # one read per shape at a time; the others wait for it
                entry = self._entries.get(shape)
                if not self._usable(entry, read_after):
                    entry = await self._read(shape)
        assert entry is not None
        self._entries.move_to_end(shape)
        return self._view_of(entry)

    def lost(self, host: str) -> None:
        """Placement refused a claim on ``host``: what is cached about it is stale."""
        self._lost[host] = self._reads
        for entry in self._entries.values():
            if host in entry.uuids:
                entry.stale = True

    def invalidate(self) -> None:
        """Capacity changed in a way not seen here (claims given back): read again."""
        for entry in self._entries.values():
            entry.stale = True

    def _usable(self, entry: _Entry | None, read_after: int | None) -> bool:
        if entry is None or entry.stale or self._clock() > entry.expires_at:
            return False
        return read_after is None or entry.read > read_after

    async def _read(self, shape: Shape) -> _Entry:
        self._reads += 1
        read, started = self._reads, self._clock()
        response = await self._client.allocation_candidates(shape)
        by_host = requests_by_host(response)
        metadata = await self._directory.metadata(list(by_host), with_counts=False)
        self._book.refresh(response.provider_summaries)
        hosts = build_hosts(response, metadata, self._book, by_host=by_host)
        entry = _Entry(
            hosts=hosts,
            allocation_requests=len(response.allocation_requests),
            read=read,
            fetched_at=started,
            expires_at=started + self._ttl * (1 - JITTER * self._rng.random()),
            names={host.uuid: host.name for host in hosts},
            uuids=frozenset(by_host),
        )
        self._entries[shape] = entry
        self._evict()
        return entry

    def _evict(self) -> None:
        while len(self._entries) > self._shapes:
            shape, _ = self._entries.popitem(last=False)
            self._reading.pop(shape, None)
        oldest = min(entry.read for entry in self._entries.values())
        self._lost = {host: reads for host, reads in self._lost.items() if reads >= oldest}

    def _view_of(self, entry: _Entry) -> CandidateView:
        hosts = entry.hosts
        if self._lost:
            # Refused during or after this read: the answer may predate the refusal.
            hosts = [h for h in hosts if self._lost.get(h.uuid, 0) < entry.read]
        return CandidateView(
            hosts=list(hosts),
            allocation_requests=entry.allocation_requests,
            hosts_found=len(entry.hosts),
            read=entry.read,
            fetched_at=entry.fetched_at,
            names=entry.names,
        )
