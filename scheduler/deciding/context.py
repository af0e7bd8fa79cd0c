"""What filters and weighers read besides the host: the request's facts, computed
once per scheduling request and updated as its instances are placed.

Where the facts come from:
- server-group members: the consumers named in ``hints.group.members``
  (located through Placement ``GET /allocations/{consumer}``) plus the ones
  this scheduler placed in the group (``groups.GroupLedger``);
- whatever else a plugin needs (``same_host`` targets, instance counts,
  heartbeats): its own prepare hook reads it into ``state``;
- availability zone and aggregate metadata: scheduler configuration keyed by
  Placement aggregate uuid (see ``settings``), membership read from Placement.
"""

from __future__ import annotations

from collections import ChainMap, Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from scheduler.deciding.cycle import CycleState
from scheduler.request.spec import GroupPolicy, Hints, ImageProperties, ServerGroupHint


@dataclass
class SchedulingContext:
    hints: Hints = field(default_factory=Hints)
    availability_zone: str | None = None
    extra_specs: Mapping[str, str] = field(default_factory=dict)
    image: ImageProperties | None = None
    max_instances_per_host: int = 50
    group_hosts: Counter[str] = field(default_factory=Counter)
    # What the plugins' prepare hooks read for this request (see ``cycle``).
    state: CycleState = field(default_factory=CycleState)
    # Every candidate's name, shared with the host cache; names added go in front.
    host_names: ChainMap[str, str] = field(default_factory=ChainMap)

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

    def trial(self) -> SchedulingContext:
        """A copy whose recorded placements do not reach this one."""
        return replace(
            self, group_hosts=Counter(self.group_hosts), host_names=self.host_names.new_child()
        )

    def record_placement(self, host: str, name: str) -> None:
        """Later instances of the same request see this one."""
        self.host_names[host] = name
        if self.group is not None:
            self.group_hosts[host] += 1
