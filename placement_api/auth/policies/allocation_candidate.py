"""Policy default for ``/allocation_candidates``."""

from __future__ import annotations

from oslo_policy import policy

from placement_api.auth.policies.base import ADMIN_OR_SERVICE, api_rule

LIST = "placement:allocation_candidates:list"

RULES: tuple[policy.RuleDefault, ...] = (
    api_rule(
        LIST,
        ADMIN_OR_SERVICE,
        "Find the ways a resource request can be met.",
        ("GET", "/allocation_candidates"),
    ),
)
