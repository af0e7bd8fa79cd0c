"""One request's scheduling cycle, as the Kubernetes framework's CycleState: the one
object the plugins see, in their prepare hooks (``cycle``) and in their verdicts and
weights (``context``). What the hooks read goes in ``state`` under typed keys; the
query terms they add narrow the candidates query; placements of the request's
earlier instances are recorded as it goes. See docs/scheduler.md.
"""

from __future__ import annotations

from collections import ChainMap, Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Generic, NoReturn, TypeVar

from scheduler.request.spec import (
    GroupPolicy,
    Hints,
    ImageProperties,
    ScheduleRequest,
    ServerGroupHint,
)

if TYPE_CHECKING:
    from scheduler.placement.facts import PlacementFacts
    from scheduler.settings import SchedulerSettings

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class RequestRefused(Exception):
    """A prepare hook found that nothing can satisfy the request."""


@dataclass(frozen=True, eq=False)
class StateKey(Generic[T_co]):
    """A typed slot of a ``CycleState``; a plugin module owns its keys (each key is
    its own slot, whatever its name: the name is for messages)."""

    name: str


class CycleState:
    """What the prepare hooks of one request read, for its verdicts and weights."""

    def __init__(self) -> None:
        self._values: dict[StateKey[Any], Any] = {}

    def write(self, key: StateKey[T], value: T) -> None:
        self._values[key] = value

    def read(self, key: StateKey[T]) -> T:
        try:
            value: T = self._values[key]
        except KeyError:
            raise LookupError(f"nothing was prepared under {key.name!r}") from None
        return value

    def get(self, key: StateKey[T]) -> T | None:
        found: T | None = self._values.get(key)
        return found

    def __contains__(self, key: StateKey[Any]) -> bool:
        return key in self._values


@dataclass
class QueryTerms:
    """Terms prepare hooks add to the unnumbered group of the candidates query."""

    member_of: list[tuple[str, ...]] = field(default_factory=list)
    not_member_of: set[str] = field(default_factory=set)
    in_tree: str | None = None
    unlimited: bool = False  # no ``limit``: the answer must hold every match
    why: list[str] = field(default_factory=list)  # one line per term, for the explanation


@dataclass
class Cycle:
    spec: ScheduleRequest
    settings: SchedulerSettings
    facts: PlacementFacts
    state: CycleState = field(default_factory=CycleState)
    terms: QueryTerms = field(default_factory=QueryTerms)
    # Where the server group's members run, those of this request included.
    group_hosts: Counter[str] = field(default_factory=Counter)
    # Every candidate's name, shared with the host cache; names added go in front.
    host_names: ChainMap[str, str] = field(default_factory=ChainMap)

    def refuse(self, reason: str) -> NoReturn:
        """Nothing can satisfy the request: fail it before Placement is asked."""
        raise RequestRefused(reason)

    # What verdicts and weights read of the request, worked out once (they run per host).

    @cached_property
    def hints(self) -> Hints:
        return self.spec.hints

    @cached_property
    def availability_zone(self) -> str | None:
        return self.spec.availability_zone

    @cached_property
    def extra_specs(self) -> Mapping[str, str]:
        return self.spec.extra_specs

    @cached_property
    def image(self) -> ImageProperties | None:
        return self.spec.image_properties

    @cached_property
    def max_instances_per_host(self) -> int:
        return self.settings.max_instances_per_host

    @property
    def group(self) -> ServerGroupHint | None:
        return self.hints.group

    @property
    def forced(self) -> bool:
        return self.hints.forces_hosts

    def name_of(self, host: str) -> str:
        return self.host_names.get(host, host)

    def names_of(self, hosts: Iterable[str]) -> str:
        return ", ".join(sorted(self.name_of(host) for host in hosts))

    def hosts_to_examine_first(self) -> frozenset[str]:
        """Hosts a decision weighing only a sample of hosts must not leave out: where a
        soft-affinity group already runs, since only there does that weigher add weight."""
        group = self.group
        if group is None or group.policy != GroupPolicy.SOFT_AFFINITY:
            return frozenset()
        return frozenset(host for host, members in self.group_hosts.items() if members > 0)

    def trial(self) -> Cycle:
        """A copy whose recorded placements do not reach this one."""
        return replace(
            self, group_hosts=Counter(self.group_hosts), host_names=self.host_names.new_child()
        )

    def record_placement(self, host: str, name: str) -> None:
        """Later instances of the same request see this one."""
        self.host_names[host] = name
        if self.group is not None:
            self.group_hosts[host] += 1
