"""Policy defaults for provider usages and per-project total usages."""

from __future__ import annotations

from oslo_policy import policy

from placement_api.auth.policies.base import (
    ADMIN_OR_PROJECT_READER_OR_SERVICE,
    ADMIN_OR_SERVICE,
    api_rule,
)

PROVIDER_USAGES = "placement:resource_providers:usages"
TOTAL_USAGES = "placement:usages"

RULES: tuple[policy.RuleDefault, ...] = (
    api_rule(
        PROVIDER_USAGES,
        ADMIN_OR_SERVICE,
        "Read what is consumed from one provider.",
        ("GET", "/resource_providers/{uuid}/usages"),
    ),
    # Readers may see their own project's totals: the handler passes the
    # queried project as the target, so this is the one rule whose target
    # is not the caller's own project.
    api_rule(
        TOTAL_USAGES,
        ADMIN_OR_PROJECT_READER_OR_SERVICE,
        "Read the total consumption of a project (and optionally a user).",
        ("GET", "/usages"),
    ),
)
