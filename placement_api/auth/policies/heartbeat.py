"""Policy defaults for host heartbeats (an extension of this service)."""

from __future__ import annotations

from oslo_policy import policy

from placement_api.auth.policies.base import ADMIN_OR_SERVICE, api_rule

UPDATE = "placement:resource_providers:heartbeat:update"
LIST = "placement:heartbeats:list"

RULES: tuple[policy.RuleDefault, ...] = (
    api_rule(
        UPDATE,
        ADMIN_OR_SERVICE,
        "Record that a host's agent is alive, with the utilisation it measured.",
        ("PUT", "/resource_providers/{uuid}/heartbeat"),
    ),
    api_rule(
        LIST,
        ADMIN_OR_SERVICE,
        "List the hosts' last heartbeats: which are alive, and their utilisation.",
        ("GET", "/heartbeats"),
    ),
)
