"""Compare the domains on the host with the allocations held against its providers.

Drift is reported, never repaired: only the owner of an allocation (the
scheduler or the operator) knows whether it or the domain is the mistake.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from agent.discovery.model import Domain
from agent.metrics import DRIFT
from agent.placement import AgentPlacement

log = logging.getLogger(__name__)

DOMAIN_WITHOUT_ALLOCATION = "domain_without_allocation"
ALLOCATION_WITHOUT_DOMAIN = "allocation_without_domain"


@dataclass(frozen=True)
class Drift:
    # Running domains nobody holds an allocation for: their resources are unaccounted.
    domains_without_allocation: tuple[Domain, ...]
    # Consumers holding resources here for which the host has no domain at all.
    # A defined but stopped domain still owns its allocation, so it is not drift.
    allocations_without_domain: dict[str, dict[str, int]]

    @property
    def found(self) -> bool:
        return bool(self.domains_without_allocation or self.allocations_without_domain)


def find_drift(domains: Iterable[Domain], allocations: dict[str, dict[str, int]]) -> Drift:
    domains = tuple(domains)
    consumers = {consumer.lower() for consumer in allocations}
    known = {domain.uuid.lower() for domain in domains}
    return Drift(
        domains_without_allocation=tuple(
            d for d in domains if d.active and d.uuid.lower() not in consumers
        ),
        allocations_without_domain={
            consumer: held
            for consumer, held in sorted(allocations.items())
            if consumer.lower() not in known
        },
    )


async def reconcile(
    client: AgentPlacement,
    provider_name: str,
    provider_uuids: Iterable[str],
    domains: Iterable[Domain],
) -> Drift:
    allocations: dict[str, dict[str, int]] = {}
    for provider_uuid in provider_uuids:
        for consumer, held in (await client.get_provider_allocations(provider_uuid)).items():
            merged = allocations.setdefault(consumer, {})
            for resource_class, amount in held.items():
                merged[resource_class] = merged.get(resource_class, 0) + amount
    drift = find_drift(domains, allocations)
    report_drift(provider_name, drift)
    return drift


def report_drift(provider_name: str, drift: Drift) -> None:
    for domain in drift.domains_without_allocation:
        log.warning(
            "drift on %s: domain %s (%s, %d vCPU, %d MiB) is running without an allocation",
            provider_name,
            domain.name,
            domain.uuid,
            domain.vcpus,
            domain.memory_mib,
        )
    for consumer, held in drift.allocations_without_domain.items():
        amounts = ", ".join(f"{rc}={amount}" for rc, amount in sorted(held.items()))
        log.warning(
            "drift on %s: consumer %s holds %s but no domain with that uuid exists",
            provider_name,
            consumer,
            amounts,
        )
    DRIFT.labels(provider_name, DOMAIN_WITHOUT_ALLOCATION).set(
        len(drift.domains_without_allocation)
    )
    DRIFT.labels(provider_name, ALLOCATION_WITHOUT_DOMAIN).set(
        len(drift.allocations_without_domain)
    )
