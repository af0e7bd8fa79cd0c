"""Finding feasible hosts: capacity, then the filters, over as many hosts as needed.

As the Kubernetes scheduler does (``percentageOfNodesToScore``), the search
stops once ``wanted`` hosts passed every check, so a decision weighs a sample
of the feasible hosts instead of all of them. It starts from a host that
rotates between decisions (``start``), so successive decisions examine
different hosts and every host is reached in turn. Hosts are examined in
chunks, each run through capacity and the filters stage by stage; the
per-stage counts and rejections are summed over the chunks, which gives what
one pass over the examined hosts would have given, since every check judges
a host on its own. With ``wanted`` 0, or when too few hosts pass, every host
is examined, so a request is never refused on a sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from scheduler.answers.explain import FilterReport, RejectedHost
from scheduler.deciding.pipeline import Pipeline
from scheduler.placement.host_state import HostState
from scheduler.plugins.cycle import Cycle

# Small chunks cost little, but each one runs every filter once more.
MIN_CHUNK = 16


@dataclass
class Search:
    """What the search found, and the counts the explanation reports."""

    feasible: list[HostState] = field(default_factory=list)
    examined: int = 0
    with_room: int = 0
    capacity_rejected: list[RejectedHost] = field(default_factory=list)
    filters: list[FilterReport] = field(default_factory=list)


def search(
    pipeline: Pipeline,
    hosts: Sequence[HostState],
    context: Cycle,
    *,
    wanted: int,
    start: int,
    first: frozenset[str] = frozenset(),
    max_rejections: int,
) -> Search:
    """The feasible hosts among ``hosts``, examined from ``start`` (wrapping round),
    stopping once at least ``wanted`` are found (0: never). Hosts in ``first`` are
    examined before the others."""
    order = _Order(hosts, start, first)
    found = Search()
    while found.examined < len(hosts) and (not wanted or len(found.feasible) < wanted):
        size = len(hosts) if not wanted else max(wanted - len(found.feasible), MIN_CHUNK)
        chunk = order.slice(found.examined, size)
        found.examined += len(chunk)
        fitting = _with_room(chunk, found, max_rejections)
        passed, reports = pipeline.run_filters(fitting, context)
        found.feasible.extend(passed)
        _add_reports(found.filters, reports, max_rejections)
    return found


class _Order:
    """The hosts rotated to begin at ``start``, ``first`` in front; a chunk is taken
    without copying the whole list, as a decision usually examines a small part."""

    def __init__(self, hosts: Sequence[HostState], start: int, first: frozenset[str]) -> None:
        self._start = start % max(1, len(hosts))
        self._hosts = hosts
        if first:
            rotated = [*hosts[self._start :], *hosts[: self._start]]
            self._hosts = [h for h in rotated if h.uuid in first]
            self._hosts += [h for h in rotated if h.uuid not in first]
            self._start = 0

    def slice(self, offset: int, size: int) -> list[HostState]:
        hosts, count = self._hosts, len(self._hosts)
        begin = self._start + min(offset, count)
        end = self._start + min(offset + size, count)
        if end <= count:
            return list(hosts[begin:end])
        if begin >= count:
            return list(hosts[begin - count : end - count])
        return [*hosts[begin:], *hosts[: end - count]]


def _with_room(chunk: list[HostState], found: Search, max_rejections: int) -> list[HostState]:
    fitting: list[HostState] = []
    for host in chunk:
        if host.fitting_request() is not None:
            fitting.append(host)
        elif len(found.capacity_rejected) < max_rejections:
            found.capacity_rejected.append(
                RejectedHost(host=host.name, uuid=host.uuid, reason=host.shortfall())
            )
    found.with_room += len(fitting)
    return fitting


def _add_reports(
    total: list[FilterReport], reports: list[FilterReport], max_rejections: int
) -> None:
    """Sum one chunk's per-filter reports into the running ones (same order: the
    pipeline's; a chunk stops reporting at the filter that emptied it). The chunk's
    reports are fresh: the first of each filter becomes the running one."""
    for index, report in enumerate(reports):
        if index == len(total):
            total.append(report)
            continue
        into = total[index]
        into.hosts_in += report.hosts_in
        into.hosts_out += report.hosts_out
        room = max_rejections - len(into.rejected)
        into.rejected.extend(report.rejected[:room])
        into.rejected_not_listed += report.rejected_not_listed + len(report.rejected[room:])
        into.noted.extend(report.noted[: max(0, max_rejections - len(into.noted))])
