"""Policy default for ``GET /capacity``, the capacity report (an extension of this service)."""

from __future__ import annotations

from oslo_policy import policy

from placement_api.auth.policies.base import api_rule

READ = "placement:capacity:read"

RULES: tuple[policy.RuleDefault, ...] = (
    # The report names every host: administrators, and readers in the
    # system's sense (a reader role), not project members.
    api_rule(
        READ,
        "role:admin or role:reader",
        "Read how many instances of a flavor still fit, and usage per host, aggregate and zone.",
        ("GET", "/capacity"),
    ),
)
