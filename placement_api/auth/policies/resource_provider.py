"""Policy defaults for ``/resource_providers`` and ``/resource_providers/{uuid}``."""

from __future__ import annotations

from oslo_policy import policy

from placement_api.auth.policies.base import ADMIN_OR_SERVICE, api_rule

LIST = "placement:resource_providers:list"
CREATE = "placement:resource_providers:create"
SHOW = "placement:resource_providers:show"
UPDATE = "placement:resource_providers:update"
DELETE = "placement:resource_providers:delete"

_COLLECTION = "/resource_providers"
_ITEM = "/resource_providers/{uuid}"

RULES: tuple[policy.RuleDefault, ...] = (
    api_rule(LIST, ADMIN_OR_SERVICE, "List or filter resource providers.", ("GET", _COLLECTION)),
    api_rule(CREATE, ADMIN_OR_SERVICE, "Create a resource provider.", ("POST", _COLLECTION)),
    api_rule(SHOW, ADMIN_OR_SERVICE, "Read one resource provider.", ("GET", _ITEM)),
    api_rule(UPDATE, ADMIN_OR_SERVICE, "Rename or re-parent a resource provider.", ("PUT", _ITEM)),
    api_rule(DELETE, ADMIN_OR_SERVICE, "Remove a resource provider.", ("DELETE", _ITEM)),
)
