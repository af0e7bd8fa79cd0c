"""Policy defaults for ``/resource_providers/{uuid}/inventories[/{resource_class}]``."""

from __future__ import annotations

from oslo_policy import policy

from placement_api.auth.policies.base import ADMIN_OR_SERVICE, api_rule

LIST = "placement:resource_providers:inventories:list"
CREATE = "placement:resource_providers:inventories:create"
SHOW = "placement:resource_providers:inventories:show"
UPDATE = "placement:resource_providers:inventories:update"
DELETE = "placement:resource_providers:inventories:delete"

_COLLECTION = "/resource_providers/{uuid}/inventories"
_ITEM = _COLLECTION + "/{resource_class}"

RULES: tuple[policy.RuleDefault, ...] = (
    api_rule(LIST, ADMIN_OR_SERVICE, "Read all inventories of a provider.", ("GET", _COLLECTION)),
    api_rule(CREATE, ADMIN_OR_SERVICE, "Add one inventory to a provider.", ("POST", _COLLECTION)),
    api_rule(SHOW, ADMIN_OR_SERVICE, "Read one inventory of a provider.", ("GET", _ITEM)),
    api_rule(
        UPDATE,
        ADMIN_OR_SERVICE,
        "Replace all inventories of a provider, or change one.",
        ("PUT", _COLLECTION),
        ("PUT", _ITEM),
    ),
    api_rule(
        DELETE,
        ADMIN_OR_SERVICE,
        "Remove all inventories of a provider, or one.",
        ("DELETE", _COLLECTION),
        ("DELETE", _ITEM),
    ),
)
