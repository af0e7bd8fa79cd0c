"""Policy defaults for ``/resource_providers/{uuid}/aggregates``."""

from __future__ import annotations

from oslo_policy import policy

from placement_api.auth.policies.base import ADMIN_OR_SERVICE, api_rule

LIST = "placement:resource_providers:aggregates:list"
UPDATE = "placement:resource_providers:aggregates:update"

_PATH = "/resource_providers/{uuid}/aggregates"

RULES: tuple[policy.RuleDefault, ...] = (
    api_rule(LIST, ADMIN_OR_SERVICE, "Read the aggregates a provider is in.", ("GET", _PATH)),
    api_rule(UPDATE, ADMIN_OR_SERVICE, "Replace the aggregates a provider is in.", ("PUT", _PATH)),
)
