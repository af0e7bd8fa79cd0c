"""Policy default for ``/reshaper``."""

from __future__ import annotations

from oslo_policy import policy

from placement_api.auth.policies.base import SERVICE, api_rule

RESHAPE = "placement:reshaper:reshape"

# Only services (nova-compute moving inventory into a nested tree) reshape.
RULES: tuple[policy.RuleDefault, ...] = (
    api_rule(
        RESHAPE,
        SERVICE,
        "Move inventories and allocations between providers atomically.",
        ("POST", "/reshaper"),
    ),
)
