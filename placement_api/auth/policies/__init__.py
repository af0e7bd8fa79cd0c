"""Policy rule defaults, one module per API resource.

Routers import the rule names from here (``policies.resource_provider.LIST``)
rather than spelling the strings themselves.
"""

from __future__ import annotations

from oslo_policy import policy

from placement_api.auth.policies import (
    aggregate,
    allocation,
    allocation_candidate,
    base,
    capacity,
    change,
    heartbeat,
    inventory,
    reshaper,
    resource_class,
    resource_provider,
    server_group,
    trait,
    usage,
)

__all__ = [
    "aggregate",
    "all_rules",
    "allocation",
    "allocation_candidate",
    "base",
    "capacity",
    "change",
    "heartbeat",
    "inventory",
    "reshaper",
    "resource_class",
    "resource_provider",
    "server_group",
    "trait",
    "usage",
]

_MODULES = (
    base,
    resource_provider,
    resource_class,
    inventory,
    aggregate,
    usage,
    trait,
    allocation,
    allocation_candidate,
    reshaper,
    change,
    capacity,
    heartbeat,
    server_group,
)


def all_rules() -> tuple[policy.RuleDefault, ...]:
    """Every rule default, generic rules first."""
    return tuple(rule for module in _MODULES for rule in module.RULES)
