"""Policy defaults for allocations, by consumer and by provider."""

from __future__ import annotations

from oslo_policy import policy

from placement_api.auth.policies.base import ADMIN_OR_SERVICE, api_rule

MANAGE = "placement:allocations:manage"
LIST = "placement:allocations:list"
UPDATE = "placement:allocations:update"
DELETE = "placement:allocations:delete"
PROVIDER_LIST = "placement:resource_providers:allocations:list"

_CONSUMER = "/allocations/{consumer_uuid}"

RULES: tuple[policy.RuleDefault, ...] = (
    api_rule(
        MANAGE,
        ADMIN_OR_SERVICE,
        "Write the allocations of several consumers at once.",
        ("POST", "/allocations"),
    ),
    api_rule(LIST, ADMIN_OR_SERVICE, "Read the allocations of a consumer.", ("GET", _CONSUMER)),
    api_rule(
        UPDATE, ADMIN_OR_SERVICE, "Replace the allocations of a consumer.", ("PUT", _CONSUMER)
    ),
    api_rule(
        DELETE, ADMIN_OR_SERVICE, "Remove the allocations of a consumer.", ("DELETE", _CONSUMER)
    ),
    api_rule(
        PROVIDER_LIST,
        ADMIN_OR_SERVICE,
        "Read the allocations made against a provider.",
        ("GET", "/resource_providers/{uuid}/allocations"),
    ),
)
