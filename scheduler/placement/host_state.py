"""Host states built from GET /allocation_candidates answers, with their usage
in one ``UsageBook`` shared by every host (a sharing provider serves many)
and the scheduler's claims counted as ``Reservation``s until Placement's
figures include them. docs/scheduler.md, The host cache.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field

from scheduler.placement.client import AllocationRequest, CandidatesResponse, ProviderSummary

SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"
# An allocation request flattened: (provider, resource class, amount) for each amount.
Needs = tuple[tuple[str, str, int], ...]
# The same with each provider's usage of the class in place of its name.
Slots = tuple[tuple["Usage", int], ...]

# A provider's usage of one resource class: (provider, resource class).
UsageKey = tuple[str, str]

_NONE: Mapping[str, Usage] = {}


@dataclass(slots=True)
class Usage:
    capacity: int
    used: int  # Placement's figure plus ``held``
    held: int = 0  # reserved here, not yet in Placement's figure
    index: int = 0  # the change feed index Placement's figure is current to

    def take(self, capacity: int, used: int, index: int) -> bool:
        """Placement's figures as of feed ``index``, unless newer ones were taken."""
        if index < self.index:
            return False
        self.capacity, self.used, self.index = capacity, used + self.held, index
        return True

    @property
    def free(self) -> int:
        return self.capacity - self.used


class UsageBook:
    """Capacity and usage per provider and resource class, as Placement reported it
    plus whatever this scheduling request has consumed since."""

    def __init__(self, summaries: Mapping[str, ProviderSummary]) -> None:
        self._usage: dict[str, dict[str, Usage]] = {
            rp: {rc: Usage(r.capacity, r.used) for rc, r in summary.resources.items()}
            for rp, summary in summaries.items()
        }
        # Counts the usages added. None is ever removed or replaced, so a host may keep
        # references to its usages until this changes (see ``HostState``).
        self.added = 0

    def usage(self, provider: str, resource_class: str) -> Usage | None:
        return self._usage.get(provider, {}).get(resource_class)

    def free(self, providers: tuple[str, ...], resource_class: str) -> int:
        usages = self._usage
        free = 0
        for rp in providers:
            usage = usages.get(rp, _NONE).get(resource_class)
            if usage is not None:
                free += usage.capacity - usage.used
        return free

    def shortfall(self, request: AllocationRequest) -> str | None:
        """Why the request no longer fits, or None when it does."""
        for rp, allocation in request.allocations.items():
            for rc, amount in allocation.resources.items():
                usage = self.usage(rp, rc)
                if usage is None or usage.free < amount:
                    free = usage.free if usage else 0
                    return f"{rc} needs {amount}, {free} left on provider {rp}"
        return None

    def refresh(self, summaries: Mapping[str, ProviderSummary], index: int = 0) -> set[UsageKey]:
        """Take Placement's figures for the providers it summarised, read when the feed
        stood at ``index`` (figures the feed brought since are newer: kept). Returns
        the usages whose figures were taken."""
        taken: set[UsageKey] = set()
        for rp, summary in summaries.items():
            figures = {rc: (r.capacity, r.used) for rc, r in summary.resources.items()}
            taken.update(self.take(rp, figures, index))
        return taken

    def take(
        self, provider: str, figures: Mapping[str, tuple[int, int]], index: int
    ) -> list[UsageKey]:
        """(capacity, used) per class of a provider, as of feed ``index``; returns the
        usages whose figures were taken."""
        book = self._usage.setdefault(provider, {})
        taken = []
        for rc, (capacity, used) in figures.items():
            usage = book.get(rc)
            if usage is None:
                book[rc] = Usage(capacity, used, index=index)
                self.added += 1
            elif not usage.take(capacity, used, index):
                continue
            taken.append((provider, rc))
        return taken

    def take_used(self, provider: str, used: Mapping[str, int], index: int) -> None:
        """Placement's usage of a known provider after a write (feed ``index``)."""
        book = self._usage.get(provider)
        if book is None:
            return
        for rc, amount in used.items():
            usage = book.get(rc)
            if usage is not None:
                usage.take(usage.capacity, amount, index)

    def take_capacity(self, provider: str, capacity: Mapping[str, int], index: int) -> None:
        """A known provider's whole inventory changed: classes absent have none now."""
        book = self._usage.get(provider)
        if book is None:
            return
        for rc in book.keys() - capacity.keys():
            book[rc].take(0, book[rc].used - book[rc].held, index)
        for rc, amount in capacity.items():
            usage = book.get(rc)
            if usage is None:
                usage = book[rc] = Usage(amount, 0, index=index)
                self.added += 1
            usage.take(amount, usage.used - usage.held, index)

    def forget_indexes(self) -> None:
        """The feed starts again (a gap): the next figures read replace these."""
        for usages in self._usage.values():
            for usage in usages.values():
                usage.index = 0

    def consume(self, request: AllocationRequest) -> list[Held]:
        taken = []
        for rp, allocation in request.allocations.items():
            book = self._usage.setdefault(rp, {})
            for rc, amount in allocation.resources.items():
                usage = book.get(rc)
                if usage is None:
                    usage = book[rc] = Usage(0, 0)
                    self.added += 1
                usage.used += amount
                usage.held += amount
                taken.append(Held((rp, rc), usage, amount))
        return taken


@dataclass(frozen=True, slots=True)
class Held:
    """An amount reserved on one usage, not yet in Placement's figure."""

    key: UsageKey
    usage: Usage
    amount: int

    def drop(self) -> None:
        """Count the amount no more (a claim that failed, or one a figure includes)."""
        self.usage.used -= self.amount
        self.usage.held -= self.amount


@dataclass
class Reservation:
    """One instance's consumption, given back with ``undo`` when its claim fails."""

    host: HostState
    held: list[Held]  # the amounts no figure taken since includes
    undone: bool = False

    def undo(self) -> None:
        if self.undone:
            return
        self.undone = True
        for part in self.held:
            part.drop()
        self.held = []
        if self.host.num_instances is not None:
            self.host.num_instances -= 1

    def settle(self) -> None:
        """Placement's figures include the claim now: nothing is held for it."""
        if self.undone:
            return
        for part in self.held:
            part.usage.held -= part.amount
        self.held = []

    def counted_in(self, taken: Container[UsageKey]) -> None:
        """Figures read after Placement wrote the claim were taken for the usages
        ``taken``: they include it, so it is neither held nor counted twice there."""
        if self.undone:
            return
        held = []
        for part in self.held:
            if part.key in taken:
                part.drop()
            else:
                held.append(part)
        self.held = held


@dataclass(frozen=True)
class HostMetadata:
    name: str
    aggregates: frozenset[str] = frozenset()
    availability_zone: str = "nova"
    aggregate_metadata: Mapping[str, frozenset[str]] = field(default_factory=dict)
    num_instances: int | None = None


@dataclass
class HostState:
    uuid: str
    name: str
    tree: tuple[str, ...]
    traits: frozenset[str]
    requests: list[AllocationRequest]
    book: UsageBook
    aggregates: frozenset[str] = frozenset()
    availability_zone: str = "nova"
    aggregate_metadata: Mapping[str, frozenset[str]] = field(default_factory=dict)
    num_instances: int | None = None
    # Every decision checks the room of the hosts it examines: the usages each request
    # draws on are looked up in the book once, again only after it added usages.
    _slots: list[tuple[AllocationRequest, Slots]] = field(
        default_factory=list, init=False, repr=False, compare=False
    )
    _looked_up: int = field(default=-1, init=False, repr=False, compare=False)

    def free(self, resource_class: str) -> int:
        """Capacity under the allocation ratio minus usage, summed over the tree."""
        return self.book.free(self.tree, resource_class)

    def fitting_request(self) -> AllocationRequest | None:
        if self._looked_up != self.book.added:
            self._look_up()
        for request, slots in self._slots:
            for usage, amount in slots:
                if usage.capacity - usage.used < amount:
                    break
            else:
                return request
        return None

    def _look_up(self) -> None:
        """The usages each request draws on; a request short of one cannot fit."""
        book = self.book
        self._slots = []
        for request in self.requests:
            slots = []
            for rp, rc, amount in needs_of(request):
                usage = book.usage(rp, rc)
                if usage is None:
                    break
                slots.append((usage, amount))
            else:
                self._slots.append((request, tuple(slots)))
        self._looked_up = book.added

    def shortfall(self) -> str:
        reasons = (self.book.shortfall(r) for r in self.requests)
        return next((reason for reason in reasons if reason), "no allocation request")

    def consume(self, request: AllocationRequest) -> Reservation:
        taken = self.book.consume(request)
        if self.num_instances is not None:
            self.num_instances += 1
        return Reservation(self, taken)


def free_per_host(hosts: Sequence[HostState], resource_class: str) -> list[float]:
    """``float(host.free(resource_class))`` for every host, in one pass: weighing
    runs it for every resource weigher of every decision."""
    amounts = []
    for host in hosts:
        book = host.book._usage
        free = 0
        for rp in host.tree:
            usage = book.get(rp, _NONE).get(resource_class)
            if usage is not None:
                free += usage.capacity - usage.used
        amounts.append(float(free))
    return amounts


def needs_of(request: AllocationRequest) -> Needs:
    return tuple(
        (rp, rc, amount)
        for rp, allocation in request.allocations.items()
        for rc, amount in allocation.resources.items()
    )


def host_of(request: AllocationRequest, summaries: Mapping[str, ProviderSummary]) -> str:
    """The root provider whose tree supplies the request's non-shared resources."""
    roots = sorted(
        {
            summaries[rp].root_provider_uuid if rp in summaries else rp
            for rp in request.allocations
            if rp not in summaries or SHARING_TRAIT not in summaries[rp].traits
        }
    )
    if roots:
        return roots[0]
    return sorted(summaries[rp].root_provider_uuid for rp in request.allocations)[0]


def requests_by_host(response: CandidatesResponse) -> dict[str, list[AllocationRequest]]:
    by_host: dict[str, list[AllocationRequest]] = {}
    for request in response.allocation_requests:
        by_host.setdefault(host_of(request, response.provider_summaries), []).append(request)
    return by_host


def build_hosts(
    response: CandidatesResponse,
    metadata: Mapping[str, HostMetadata],
    book: UsageBook | None = None,
    *,
    by_host: Mapping[str, list[AllocationRequest]] | None = None,
) -> list[HostState]:
    """One host state per host with candidates, in Placement's order."""
    summaries = response.provider_summaries
    book = book or UsageBook(summaries)
    trees = _trees(summaries)
    if by_host is None:
        by_host = requests_by_host(response)
    hosts = []
    for host, requests in by_host.items():
        facts = metadata.get(host) or HostMetadata(name=host)
        root = summaries.get(host)
        hosts.append(
            HostState(
                uuid=host,
                name=facts.name,
                tree=trees.get(host, (host,)),
                traits=frozenset(root.traits) if root else frozenset(),
                requests=requests,
                book=book,
                aggregates=facts.aggregates,
                availability_zone=facts.availability_zone,
                aggregate_metadata=facts.aggregate_metadata,
                num_instances=facts.num_instances,
            )
        )
    return hosts


def _trees(summaries: Mapping[str, ProviderSummary]) -> dict[str, tuple[str, ...]]:
    trees: dict[str, list[str]] = {}
    for rp, summary in summaries.items():
        trees.setdefault(summary.root_provider_uuid, []).append(rp)
    return {root: tuple(members) for root, members in trees.items()}
