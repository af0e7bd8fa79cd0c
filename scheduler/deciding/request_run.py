"""One request's working set while the engine decides it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from scheduler.placement.client import GroupRule, MovingFrom
from scheduler.placement.host_cache import CandidateView, ReadMark
from scheduler.placement.host_state import HostState
from scheduler.placement.query import QueryParams
from scheduler.plugins.cycle import Cycle
from scheduler.request.spec import ResourceRequest


@dataclass
class RequestRun:
    """One request's hosts: the answer it started from, less the hosts whose claims
    Placement refused during the request."""

    query: QueryParams
    request: ResourceRequest
    mark: ReadMark  # where the request began: answers read after it were read for it
    view: CandidateView
    hosts: Sequence[HostState]
    cycle: Cycle
    forced: str = ""
    lost: set[str] = field(default_factory=set)
    group: GroupRule | None = None  # the server group the claims name
    moving: MovingFrom | None = None  # a move's claim: see ``deciding.moving``
    excluded: frozenset[str] = frozenset()  # a move's source host, unless allowed

    def take(self, view: CandidateView) -> None:
        """Decide on ``view``'s hosts, less the excluded ones."""
        self.view = view
        self.hosts = [host for host in view.hosts if host.uuid not in self.excluded]
