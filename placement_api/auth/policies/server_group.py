"""Policy defaults for server groups (an extension of this service)."""

from __future__ import annotations

from oslo_policy import policy

from placement_api.auth.policies.base import ADMIN_OR_SERVICE, api_rule

SHOW = "placement:server_groups:show"
LIST = "placement:server_groups:list"

RULES: tuple[policy.RuleDefault, ...] = (
    api_rule(
        SHOW,
        ADMIN_OR_SERVICE,
        "Show a server group's rule and where its members run.",
        ("GET", "/server_groups/{uuid}"),
    ),
    api_rule(
        LIST,
        ADMIN_OR_SERVICE,
        "List the server groups a consumer is a member of.",
        ("GET", "/server_groups"),
    ),
)
