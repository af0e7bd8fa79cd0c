"""Real-shaped GET /allocation_candidates answers (microversion 1.39) for unit tests.

The JSON is what Placement returns: ``allocation_requests`` with
``allocations`` and ``mappings``, ``provider_summaries`` with capacity and
used per class, traits, parent and root. Tests build host states from it
through the same code the scheduler runs on a live answer.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from flavors.flavor import Flavor
from scheduler.answers.explain import InstanceExplanation
from scheduler.deciding.choosing import Chooser
from scheduler.deciding.pipeline import WeighedHost
from scheduler.placement.client import CandidatesResponse
from scheduler.placement.directory import ProviderDirectory
from scheduler.placement.facts import PlacementFacts
from scheduler.placement.host_state import HostMetadata, HostState, build_hosts
from scheduler.plugins.cycle import Cycle
from scheduler.request.spec import Hints, ImageProperties, ScheduleRequest
from scheduler.settings import SchedulerSettings
from tests.scheduler.live import scheduler_placement

NAMESPACE = uuid.UUID("6f1c1c52-3a43-4a57-9b55-2a8f1d0b8e51")


class Clock:
    """A monotonic clock the test moves (``now``)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def uuid_of(name: str) -> str:
    return str(uuid.uuid5(NAMESPACE, name))


@dataclass
class Node:
    name: str
    capacity: dict[str, int] = field(
        default_factory=lambda: {"VCPU": 16, "MEMORY_MB": 32768, "DISK_GB": 500}
    )
    used: dict[str, int] = field(default_factory=dict)
    traits: tuple[str, ...] = ()
    availability_zone: str = "nova"
    aggregates: tuple[str, ...] = ()
    aggregate_metadata: dict[str, frozenset[str]] = field(default_factory=dict)
    num_instances: int | None = None

    @property
    def uuid(self) -> str:
        return uuid_of(self.name)

    def summary(self) -> dict[str, Any]:
        return {
            "resources": {
                rc: {"capacity": cap, "used": self.used.get(rc, 0)}
                for rc, cap in self.capacity.items()
            },
            "traits": list(self.traits),
            "parent_provider_uuid": None,
            "root_provider_uuid": self.uuid,
        }

    def metadata(self) -> HostMetadata:
        return HostMetadata(
            name=self.name,
            aggregates=frozenset(self.aggregates),
            availability_zone=self.availability_zone,
            aggregate_metadata=self.aggregate_metadata,
            num_instances=self.num_instances,
        )


def candidates_json(nodes: list[Node], request: dict[str, int]) -> dict[str, Any]:
    """Placement's answer: one allocation request per node with room for ``request``."""
    fitting = [
        node
        for node in nodes
        if all(
            node.capacity.get(rc, 0) - node.used.get(rc, 0) >= amount
            for rc, amount in request.items()
        )
    ]
    return {
        "allocation_requests": [
            {
                "allocations": {node.uuid: {"resources": dict(request)}},
                "mappings": {"": [node.uuid]},
            }
            for node in fitting
        ],
        "provider_summaries": {node.uuid: node.summary() for node in fitting},
    }


def hosts_for(nodes: list[Node], request: dict[str, int]) -> list[HostState]:
    response = CandidatesResponse.model_validate(candidates_json(nodes, request))
    return build_hosts(response, {node.uuid: node.metadata() for node in nodes})


def cycle_of(
    *,
    hints: Hints | None = None,
    availability_zone: str | None = None,
    extra_specs: dict[str, str] | None = None,
    image: ImageProperties | None = None,
    max_instances_per_host: int = 50,
    group_hosts: Counter[str] | None = None,
) -> Cycle:
    """A request's cycle as verdicts and weights see it, from the parts they read."""
    spec = ScheduleRequest(
        resources={"VCPU": 1},
        hints=hints or Hints(),
        availability_zone=availability_zone,
        flavor=Flavor(vcpus=0, memory_mb=0, extra_specs=extra_specs) if extra_specs else None,
        image_properties=image,
    )
    settings = SchedulerSettings(max_instances_per_host=max_instances_per_host)
    # Verdicts and weights read no Placement: the facts are there for prepare hooks.
    client = scheduler_placement("http://127.0.0.1:9")
    facts = PlacementFacts(client, ProviderDirectory(client, {}))
    return Cycle(spec, settings, facts, group_hosts=group_hosts or Counter())


def context_naming(hosts: list[HostState], **fields: Any) -> Cycle:
    context = cycle_of(**fields)
    context.host_names.update({host.uuid: host.name for host in hosts})
    return context


def decide(
    chooser: Chooser,
    hosts: list[HostState],
    context: Cycle,
    report: InstanceExplanation,
) -> list[WeighedHost]:
    """Rank as the engine does for one instance: move the cursor on, explain, and
    the weighed hosts (``UnplaceableError`` when none)."""
    ranking = chooser.rank(hosts, context)
    chooser.move_on(ranking)
    ranking.explain(report)
    return ranking.best()
