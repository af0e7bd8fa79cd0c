"""Shared building blocks of the policy defaults: the generic rules every
resource rule points at, and one constructor so each resource module is data.

The secure-RBAC (new) default of each generic rule is registered with the
legacy ``role:admin`` check as its deprecated rule; oslo.policy ORs the two
unless ``enforce_new_defaults`` is on.
"""

from __future__ import annotations

from oslo_policy import policy

# Rule names and check strings are API identifiers shared with OpenStack
# Placement: operators' policy files refer to them.
ADMIN_API = "admin_api"
SERVICE_API = "service_api"
ADMIN_OR_SERVICE_API = "admin_or_service_api"
PROJECT_READER_API = "project_reader_api"
ADMIN_OR_PROJECT_READER_OR_SERVICE_API = "admin_or_project_reader_or_service_api"

ADMIN_OR_SERVICE = f"rule:{ADMIN_OR_SERVICE_API}"
SERVICE = f"rule:{SERVICE_API}"
ADMIN_OR_PROJECT_READER_OR_SERVICE = f"rule:{ADMIN_OR_PROJECT_READER_OR_SERVICE_API}"

PROJECT_SCOPE = "project"
LEGACY_ADMIN_CHECK = "role:admin"

_LEGACY_DEPRECATION = (
    "Placement now ships secure-RBAC defaults (admin, service and project reader "
    "roles, project scope). The admin-only legacy default still applies while "
    "[oslo_policy] enforce_new_defaults is off and will be dropped later."
)
# The Wallaby release, in oslo's one-letter release notation.
_DEPRECATED_SINCE = "W"

# Upstream names the deprecated rule "rule:admin_api" (not "admin_api"), so an
# operator's override of admin_api never replaces the new defaults; keep it.
LEGACY_ADMIN_RULE = policy.DeprecatedRule(
    name=f"rule:{ADMIN_API}",
    check_str=LEGACY_ADMIN_CHECK,
    deprecated_reason=_LEGACY_DEPRECATION,
    deprecated_since=_DEPRECATED_SINCE,
)

Operation = tuple[str, str]


def api_rule(
    name: str, check_str: str, description: str, *operations: Operation
) -> policy.DocumentedRuleDefault:
    """A project-scoped rule guarding the given (method, path) operations."""
    return policy.DocumentedRuleDefault(
        name=name,
        check_str=check_str,
        description=description,
        operations=[{"method": method, "path": path} for method, path in operations],
        scope_types=[PROJECT_SCOPE],
    )


RULES: tuple[policy.RuleDefault, ...] = (
    policy.RuleDefault(
        ADMIN_API,
        LEGACY_ADMIN_CHECK,
        description="Administrator-only access; the legacy default of every API.",
        scope_types=[PROJECT_SCOPE],
    ),
    policy.RuleDefault(
        SERVICE_API,
        "role:service",
        description="Access for other OpenStack services only.",
        scope_types=[PROJECT_SCOPE],
        deprecated_rule=LEGACY_ADMIN_RULE,
    ),
    policy.RuleDefault(
        ADMIN_OR_SERVICE_API,
        "role:admin or role:service",
        description="Access for administrators and other OpenStack services.",
        scope_types=[PROJECT_SCOPE],
        deprecated_rule=LEGACY_ADMIN_RULE,
    ),
    # Unscoped on purpose (as upstream): it is only ever reached through
    # ADMIN_OR_PROJECT_READER_OR_SERVICE_API, which carries the scope.
    policy.RuleDefault(
        PROJECT_READER_API,
        "role:reader and project_id:%(project_id)s",
        description="Read access for readers of the project the target belongs to.",
        deprecated_rule=LEGACY_ADMIN_RULE,
    ),
    policy.RuleDefault(
        ADMIN_OR_PROJECT_READER_OR_SERVICE_API,
        f"role:admin or rule:{PROJECT_READER_API} or role:service",
        description="Read access for administrators, services and readers of the target project.",
        scope_types=[PROJECT_SCOPE],
        deprecated_rule=LEGACY_ADMIN_RULE,
    ),
)
