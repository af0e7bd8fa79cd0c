"""Policy defaults for ``GET /capacity``, the capacity report (an extension of this service)."""

from __future__ import annotations

from oslo_policy import policy

from placement_api.auth.policies.base import ADMIN_OR_SERVICE, api_rule

READ = "placement:capacity:read"
HOSTS = "placement:capacity:hosts:read"

RULES: tuple[policy.RuleDefault, ...] = (
    # Totals, per class, aggregate and zone: administrators, and readers in
    # the system's sense (a reader role), not project members.
    api_rule(
        READ,
        "role:admin or role:reader",
        "Read how many instances of a flavor still fit, and usage per class, aggregate and zone.",
        ("GET", "/capacity"),
    ),
    # Each host's and sharing provider's name, uuid and usage: as upstream's
    # provider listings, for administrators and services (most Keystone
    # members also hold reader).
    api_rule(
        HOSTS,
        ADMIN_OR_SERVICE,
        "Read the per-host breakdown of the capacity report (by=host) and its sharing providers.",
        ("GET", "/capacity?by=host"),
    ),
)
