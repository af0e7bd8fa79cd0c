"""Policy defaults for ``/traits`` and ``/resource_providers/{uuid}/traits``."""

from __future__ import annotations

from oslo_policy import policy

from placement_api.auth.policies.base import ADMIN_OR_SERVICE, api_rule

LIST = "placement:traits:list"
SHOW = "placement:traits:show"
UPDATE = "placement:traits:update"
DELETE = "placement:traits:delete"

PROVIDER_LIST = "placement:resource_providers:traits:list"
PROVIDER_UPDATE = "placement:resource_providers:traits:update"
PROVIDER_DELETE = "placement:resource_providers:traits:delete"

_TRAIT = "/traits/{name}"
_PROVIDER_TRAITS = "/resource_providers/{uuid}/traits"

RULES: tuple[policy.RuleDefault, ...] = (
    api_rule(LIST, ADMIN_OR_SERVICE, "List or filter traits.", ("GET", "/traits")),
    api_rule(SHOW, ADMIN_OR_SERVICE, "Check that a trait exists.", ("GET", _TRAIT)),
    api_rule(UPDATE, ADMIN_OR_SERVICE, "Create a custom trait.", ("PUT", _TRAIT)),
    api_rule(DELETE, ADMIN_OR_SERVICE, "Remove a custom trait.", ("DELETE", _TRAIT)),
    api_rule(
        PROVIDER_LIST,
        ADMIN_OR_SERVICE,
        "Read the traits of a provider.",
        ("GET", _PROVIDER_TRAITS),
    ),
    api_rule(
        PROVIDER_UPDATE,
        ADMIN_OR_SERVICE,
        "Replace the traits of a provider.",
        ("PUT", _PROVIDER_TRAITS),
    ),
    api_rule(
        PROVIDER_DELETE,
        ADMIN_OR_SERVICE,
        "Remove all traits from a provider.",
        ("DELETE", _PROVIDER_TRAITS),
    ),
)
