"""Policy default for ``GET /changes``, the change feed (an extension of this service)."""

from __future__ import annotations

from oslo_policy import policy

from placement_api.auth.policies.base import ADMIN_OR_SERVICE, api_rule

LIST = "placement:changes:list"

RULES: tuple[policy.RuleDefault, ...] = (
    api_rule(
        LIST,
        ADMIN_OR_SERVICE,
        "Follow the feed of changes to providers, inventories, allocations, traits, "
        "aggregates and resource classes.",
        ("GET", "/changes"),
    ),
)
