"""Policy defaults for ``/resource_classes`` and ``/resource_classes/{name}``."""

from __future__ import annotations

from oslo_policy import policy

from placement_api.auth.policies.base import ADMIN_OR_SERVICE, api_rule

LIST = "placement:resource_classes:list"
CREATE = "placement:resource_classes:create"
SHOW = "placement:resource_classes:show"
UPDATE = "placement:resource_classes:update"
DELETE = "placement:resource_classes:delete"

_COLLECTION = "/resource_classes"
_ITEM = "/resource_classes/{name}"

RULES: tuple[policy.RuleDefault, ...] = (
    api_rule(
        LIST, ADMIN_OR_SERVICE, "List standard and custom resource classes.", ("GET", _COLLECTION)
    ),
    api_rule(CREATE, ADMIN_OR_SERVICE, "Create a custom resource class.", ("POST", _COLLECTION)),
    api_rule(SHOW, ADMIN_OR_SERVICE, "Read one resource class.", ("GET", _ITEM)),
    api_rule(
        UPDATE,
        ADMIN_OR_SERVICE,
        "Create (1.7+) or rename (1.2-1.6) a custom resource class.",
        ("PUT", _ITEM),
    ),
    api_rule(
        DELETE, ADMIN_OR_SERVICE, "Remove an unused custom resource class.", ("DELETE", _ITEM)
    ),
)
