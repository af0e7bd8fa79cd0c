"""Host states kept between decisions: one GET /allocation_candidates answer per
request shape and one usage book for every shape, kept current from the change feed
(on a timer without it). When an answer is read again, and why a stale one costs a
retry and never an overcommit: docs/scheduler.md, "The host cache".
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from placement_client import PlacementError
from scheduler.placement.client import SchedulerPlacement
from scheduler.placement.directory import ProviderDirectory
from scheduler.placement.feed_effects import Change, Effects, effects_of
from scheduler.placement.host_state import (
    HostState,
    Reservation,
    UsageBook,
    UsageKey,
    build_hosts,
    requests_by_host,
)

LOG = logging.getLogger(__name__)
Shape = tuple[tuple[str, str], ...]
Clock = Callable[[], float]
JITTER = 0.2
# Own claims whose feed entry has not come yet, and consumers whose entry came
# recently (a claim's entry may arrive before Placement's answer to the claim).
MAX_AWAITED = 10_000
RESHAPING_KEPT = 64
FILTERING = ("required", "member_of", "in_tree")


@dataclass(frozen=True)
class ReadMark:
    """A point in the cache's life (a request's start): answers read after it are
    fresh for whoever took it."""

    reads: int  # the reads started before it
    at: float


@dataclass(frozen=True)
class CandidateView:
    """What one decision starts from: the cached host states (shared: read only)."""

    hosts: Sequence[HostState]
    allocation_requests: int
    hosts_found: int
    fetched_at: float
    names: dict[str, str]  # host uuid -> name, for every host of the answer (shared)
    fresh: bool  # read after the caller's mark, not kept from before it


@dataclass
class _Entry:
    hosts: tuple[HostState, ...]  # never changed: every decision's view shares it
    allocation_requests: int
    read: int
    fetched_at: float
    expires_at: float
    names: dict[str, str]
    uuids: frozenset[str] = field(default_factory=frozenset)  # hosts
    providers: frozenset[str] = field(default_factory=frozenset)  # every summarised one
    classes: frozenset[str] = field(default_factory=frozenset)  # asked for by the shape
    filtering: bool = False  # the shape names traits, aggregates or a tree
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
        # host -> reads started before Placement refused a claim on it (on the timer)
        self._lost: dict[str, int] = {}
        self._live = False  # following the change feed
        self._index = 0  # the last feed index applied
        # The latest pages that may change which hosts an answer lists, to judge the
        # answers whose read was under way when they came.
        self._reshaping: deque[Effects] = deque(maxlen=RESHAPING_KEPT)
        self._awaited: OrderedDict[str, Reservation] = OrderedDict()
        self._echoed: OrderedDict[str, None] = OrderedDict()

    def mark(self) -> ReadMark:
        return ReadMark(self._reads, self._clock())

    @property
    def live(self) -> bool:
        return self._live

    async def view(
        self,
        query: Sequence[tuple[str, str]],
        *,
        since: ReadMark | None = None,
        fresh: bool = False,
    ) -> CandidateView:
        """The hosts for this query; read from Placement unless a usable answer is
        cached. The view says whether it was read after ``since``; with ``fresh``,
        only such an answer will do."""
        read_after = since.reads if fresh and since is not None else None
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
        return self._view_of(entry, since)

    def claimed(self, consumer: str, reservation: Reservation) -> None:
        """Placement wrote the claim: held until its feed entry comes (at once
        without the feed: the next read shows it)."""
        if not self._live or consumer in self._echoed:
            self._echoed.pop(consumer, None)
            reservation.settle()
            return
        self._awaited[consumer] = reservation
        while len(self._awaited) > MAX_AWAITED:
            self._awaited.popitem(last=False)[1].settle()

    async def lost(self, host: str) -> None:
        """Placement refused a claim on ``host``: what is cached about it is stale."""
        if self._live:
            try:
                await self._read_again(self._tree_of(host))
                return
            except PlacementError as exc:
                LOG.warning("host %s not read again (%s): its answers will be", host, exc)
        self._lost[host] = self._reads
        for entry in self._entries.values():
            if host in entry.uuids:
                entry.stale = True

    def invalidate(self) -> None:
        """Capacity changed in a way not seen here (claims given back): read again.
        The feed reports it, when followed."""
        if not self._live:
            self._mark_stale(lambda entry: True)

    # The change feed's reader (``change_feed.FeedReader``).

    def apply(self, changes: Sequence[Change]) -> None:
        effects = effects_of(changes)
        self._index = effects.index
        for consumer in effects.consumers:
            reservation = self._awaited.pop(consumer, None)
            if reservation is None:
                self._remember_echo(consumer)
            else:
                reservation.settle()
        for provider, capacity in effects.capacity.items():
            self._book.take_capacity(provider, capacity, effects.index)
        for provider, used in effects.used.items():
            self._book.take_used(provider, used, effects.index)
        if effects.structural:
            self._reshaping.append(effects)
            self._mark_stale(lambda entry: _reshapes(entry, effects))
        self._directory.apply(effects)

    def resync(self, index: int) -> None:
        self._index = index
        self._reshaping.clear()
        while self._awaited:  # any read from now on includes them
            self._awaited.popitem()[1].settle()
        self._echoed.clear()
        self._book.forget_indexes()
        self._mark_stale(lambda entry: True)
        self._directory.forget()

    def following(self, live: bool) -> None:
        self._live = live
        self._directory.following(live)

    def _remember_echo(self, consumer: str) -> None:
        self._echoed[consumer] = None
        if len(self._echoed) > MAX_AWAITED:
            self._echoed.popitem(last=False)

    def _mark_stale(self, affected: Callable[[_Entry], bool]) -> None:
        for entry in self._entries.values():
            if affected(entry):
                entry.stale = True

    def _usable(self, entry: _Entry | None, read_after: int | None) -> bool:
        if entry is None or entry.stale or (not self._live and self._clock() > entry.expires_at):
            return False
        return read_after is None or entry.read > read_after

    async def _read(self, shape: Shape) -> _Entry:
        self._reads += 1
        read, started, index = self._reads, self._clock(), self._index
        written = list(self._awaited.values())
        response = await self._client.allocation_candidates(shape)
        by_host = requests_by_host(response)
        metadata = await self._directory.metadata(list(by_host), with_counts=False)
        _counted(written, self._book.refresh(response.provider_summaries, index))
        hosts = build_hosts(response, metadata, self._book, by_host=by_host)
        entry = _Entry(
            hosts=tuple(hosts),
            allocation_requests=len(response.allocation_requests),
            read=read,
            fetched_at=started,
            expires_at=started + self._ttl * (1 - JITTER * self._rng.random()),
            names={host.uuid: host.name for host in hosts},
            uuids=frozenset(by_host),
            providers=frozenset(response.provider_summaries),
            classes=_classes(shape),
            filtering=any(name.startswith(FILTERING) for name, _ in shape),
        )
        entry.stale = self._reshaped_since(entry, index)
        self._entries[shape] = entry
        self._evict()
        return entry

    def _reshaped_since(self, entry: _Entry, index: int) -> bool:
        """Whether pages applied after ``index`` (during the entry's read) may change
        which hosts it lists; when too many came to tell, they may."""
        kept = self._reshaping
        if len(kept) == kept.maxlen and kept[0].index > index:
            return True
        return any(_reshapes(entry, effects) for effects in kept if effects.index > index)

    async def _read_again(self, providers: Sequence[str]) -> None:
        index, written = self._index, list(self._awaited.values())
        for provider in providers:
            figures = await self._client.provider_figures(provider)
            _counted(written, self._book.take(provider, figures, index))

    def _tree_of(self, host: str) -> tuple[str, ...]:
        for entry in reversed(self._entries.values()):
            if host in entry.uuids:
                return next(h.tree for h in entry.hosts if h.uuid == host)
        return (host,)

    def _evict(self) -> None:
        while len(self._entries) > self._shapes:
            shape, _ = self._entries.popitem(last=False)
            self._reading.pop(shape, None)
        oldest = min(entry.read for entry in self._entries.values())
        self._lost = {host: reads for host, reads in self._lost.items() if reads >= oldest}

    def _view_of(self, entry: _Entry, since: ReadMark | None) -> CandidateView:
        hosts: Sequence[HostState] = entry.hosts
        if self._lost:
            # Refused during or after this read: the answer may predate the refusal.
            hosts = [h for h in hosts if self._lost.get(h.uuid, 0) < entry.read]
        return CandidateView(
            hosts=hosts,
            allocation_requests=entry.allocation_requests,
            hosts_found=len(entry.hosts),
            fetched_at=entry.fetched_at,
            names=entry.names,
            fresh=since is not None and entry.read > since.reads,
        )


def _counted(written: Sequence[Reservation], taken: Collection[UsageKey]) -> None:
    """Figures read after Placement wrote these claims, whose feed entries had not
    come, were taken for the usages ``taken``: they include the claims."""
    if taken:
        for reservation in written:
            reservation.counted_in(taken)


def _classes(shape: Shape) -> frozenset[str]:
    """The resource classes a shape asks for (``resources<suffix>=RC:N,...``)."""
    return frozenset(
        amount.split(":", 1)[0]
        for name, value in shape
        if name.startswith("resources")
        for amount in value.split(",")
    )


def _reshapes(entry: _Entry, effects: Effects) -> bool:
    """Whether the changes may make the answer list other hosts."""
    if effects.reshaped and (entry.filtering or not entry.providers.isdisjoint(effects.reshaped)):
        return True
    return any(
        provider not in entry.providers and not entry.classes.isdisjoint(capacity)
        for provider, capacity in effects.capacity.items()
    )
