"""Policy decisions with the real oslo.policy, legacy and secure-RBAC defaults."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

import pytest
from oslo_policy.policy import PolicyNotRegistered

from placement_api import errors
from placement_api.auth import policies
from placement_api.auth.context import RequestContext, context_from_headers
from placement_api.auth.policies import (
    aggregate,
    allocation,
    allocation_candidate,
    change,
    heartbeat,
    inventory,
    reshaper,
    resource_class,
    resource_provider,
    trait,
    usage,
)
from placement_api.auth.policy import Policy

PROJECT = "6a1f0b1c-project"
OTHER_PROJECT = "9d3e7f2a-other"

# The request headers of each kind of caller, as the conformance suite sends them.
PERSONAS: dict[str, dict[str, str]] = {
    "legacy_admin_token": {"x-auth-token": "admin"},
    "admin": {"x-auth-token": "user", "x-roles": "admin", "x-project-id": "admin-project"},
    "service": {"x-auth-token": "user", "x-roles": "service", "x-project-id": "service-project"},
    "system_admin": {
        "x-auth-token": "user",
        "x-roles": "admin,member,reader",
        "openstack-system-scope": "all",
    },
    "system_reader": {
        "x-auth-token": "user",
        "x-roles": "reader",
        "openstack-system-scope": "all",
    },
    "project_admin": {
        "x-auth-token": "user",
        "x-roles": "admin,member,reader",
        "x-project-id": PROJECT,
    },
    "project_member": {"x-auth-token": "user", "x-roles": "member,reader", "x-project-id": PROJECT},
    "project_reader": {"x-auth-token": "user", "x-roles": "reader", "x-project-id": PROJECT},
    "other_project_reader": {
        "x-auth-token": "user",
        "x-roles": "reader",
        "x-project-id": OTHER_PROJECT,
    },
    "no_role": {"x-auth-token": "user"},
}

# A representative admin-or-service rule per resource.
ADMIN_OR_SERVICE_RULES = [
    resource_provider.LIST,
    resource_provider.DELETE,
    inventory.UPDATE,
    aggregate.UPDATE,
    usage.PROVIDER_USAGES,
    trait.LIST,
    trait.PROVIDER_UPDATE,
    resource_class.CREATE,
    allocation.MANAGE,
    allocation.LIST,
    allocation.PROVIDER_LIST,
    allocation_candidate.LIST,
    change.LIST,
    heartbeat.UPDATE,
    heartbeat.LIST,
]

ADMIN_ROLE_HOLDERS = {"legacy_admin_token", "admin", "project_admin"}
PROJECT_READERS = {"project_admin", "project_member", "project_reader"}

# Who may do what, by mode: secure-RBAC or legacy defaults, scope checked
# (oslo.policy's behaviour, our default) or not. Legacy mode ORs each new
# default with role:admin; unchecked scope lets a system-scoped admin through.
MODES = {
    "secure": {"enforce_new_defaults": True, "enforce_scope": True},
    "legacy": {"enforce_new_defaults": False, "enforce_scope": True},
    "secure_unscoped": {"enforce_new_defaults": True, "enforce_scope": False},
    "legacy_unscoped": {"enforce_new_defaults": False, "enforce_scope": False},
}
_ADMIN_OR_SERVICE = ADMIN_ROLE_HOLDERS | {"service"}
_PROJECT_USAGES = _ADMIN_OR_SERVICE | PROJECT_READERS
EXPECTED_ALLOWED = {
    ("secure", "admin_or_service"): _ADMIN_OR_SERVICE,
    ("legacy", "admin_or_service"): _ADMIN_OR_SERVICE,
    ("secure_unscoped", "admin_or_service"): _ADMIN_OR_SERVICE | {"system_admin"},
    ("legacy_unscoped", "admin_or_service"): _ADMIN_OR_SERVICE | {"system_admin"},
    ("secure", "reshape"): {"service"},
    ("legacy", "reshape"): _ADMIN_OR_SERVICE,
    ("secure_unscoped", "reshape"): {"service"},
    ("legacy_unscoped", "reshape"): _ADMIN_OR_SERVICE | {"system_admin"},
    ("secure", "project_usages"): _PROJECT_USAGES,
    ("legacy", "project_usages"): _PROJECT_USAGES,
    ("secure_unscoped", "project_usages"): _PROJECT_USAGES | {"system_admin"},
    ("legacy_unscoped", "project_usages"): _PROJECT_USAGES | {"system_admin"},
}

# Every rule name upstream Placement registers: operators' files name them.
UPSTREAM_RULE_NAMES = {
    "admin_api",
    "service_api",
    "admin_or_service_api",
    "project_reader_api",
    "admin_or_project_reader_or_service_api",
    "placement:resource_providers:list",
    "placement:resource_providers:create",
    "placement:resource_providers:show",
    "placement:resource_providers:update",
    "placement:resource_providers:delete",
    "placement:resource_classes:list",
    "placement:resource_classes:create",
    "placement:resource_classes:show",
    "placement:resource_classes:update",
    "placement:resource_classes:delete",
    "placement:resource_providers:inventories:list",
    "placement:resource_providers:inventories:create",
    "placement:resource_providers:inventories:show",
    "placement:resource_providers:inventories:update",
    "placement:resource_providers:inventories:delete",
    "placement:resource_providers:aggregates:list",
    "placement:resource_providers:aggregates:update",
    "placement:resource_providers:usages",
    "placement:usages",
    "placement:traits:list",
    "placement:traits:show",
    "placement:traits:update",
    "placement:traits:delete",
    "placement:resource_providers:traits:list",
    "placement:resource_providers:traits:update",
    "placement:resource_providers:traits:delete",
    "placement:allocations:manage",
    "placement:allocations:list",
    "placement:allocations:update",
    "placement:allocations:delete",
    "placement:resource_providers:allocations:list",
    "placement:allocation_candidates:list",
    "placement:reshaper:reshape",
}


def caller(persona: str) -> RequestContext:
    return context_from_headers(PERSONAS[persona], f"req-{persona}", "noauth2")


def allowed(
    policy: Policy, rule: str, context: RequestContext, target: Mapping[str, object] | None = None
) -> bool:
    try:
        policy.authorize(rule, context, target)
    except errors.Forbidden:
        return False
    return True


@pytest.fixture(scope="module")
def default_policies() -> dict[str, Policy]:
    return {mode: Policy(policy_file=None, **switches) for mode, switches in MODES.items()}


# Rules of this service's extensions, which upstream does not have.
EXTENSION_RULE_NAMES = {
    "placement:changes:list",
    "placement:capacity:read",
    "placement:capacity:hosts:read",
    "placement:resource_providers:heartbeat:update",
    "placement:heartbeats:list",
    "placement:server_groups:show",
    "placement:server_groups:list",
}


def test_every_upstream_rule_is_registered_under_its_upstream_name() -> None:
    assert {
        rule.name for rule in policies.all_rules()
    } == UPSTREAM_RULE_NAMES | EXTENSION_RULE_NAMES


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rule", ADMIN_OR_SERVICE_RULES)
def test_resource_rules_allow_admins_and_services_only(
    default_policies: dict[str, Policy], mode: str, rule: str
) -> None:
    decisions = {
        persona for persona in PERSONAS if allowed(default_policies[mode], rule, caller(persona))
    }
    assert decisions == EXPECTED_ALLOWED[(mode, "admin_or_service")]


@pytest.mark.parametrize("mode", MODES)
def test_reshape_is_for_services_and_in_legacy_mode_admins(
    default_policies: dict[str, Policy], mode: str
) -> None:
    decisions = {
        persona
        for persona in PERSONAS
        if allowed(default_policies[mode], reshaper.RESHAPE, caller(persona))
    }
    assert decisions == EXPECTED_ALLOWED[(mode, "reshape")]


@pytest.mark.parametrize("mode", MODES)
def test_total_usages_are_readable_by_readers_of_the_target_project(
    default_policies: dict[str, Policy], mode: str
) -> None:
    target = {"project_id": PROJECT}
    decisions = {
        persona
        for persona in PERSONAS
        if allowed(default_policies[mode], usage.TOTAL_USAGES, caller(persona), target)
    }
    assert decisions == EXPECTED_ALLOWED[(mode, "project_usages")]


@pytest.mark.parametrize("mode", MODES)
def test_total_usages_of_a_missing_project_are_denied_to_readers(
    default_policies: dict[str, Policy], mode: str
) -> None:
    context = caller("project_reader")
    assert not allowed(default_policies[mode], usage.TOTAL_USAGES, context, {"project_id": None})


def test_denial_is_forbidden_with_the_rule_named(default_policies: dict[str, Policy]) -> None:
    with pytest.raises(errors.Forbidden) as raised:
        default_policies["secure"].authorize(resource_provider.CREATE, caller("project_member"))
    assert raised.value.status == 403
    assert raised.value.detail == (
        "Policy does not allow placement:resource_providers:create to be performed."
    )


def test_scope_mismatch_is_forbidden_not_an_error(default_policies: dict[str, Policy]) -> None:
    with pytest.raises(errors.Forbidden, match=r"placement:traits:list"):
        default_policies["secure"].authorize(trait.LIST, caller("system_admin"))


def test_unregistered_rule_is_a_programming_error(default_policies: dict[str, Policy]) -> None:
    with pytest.raises(PolicyNotRegistered):
        default_policies["secure"].authorize("placement:no_such:rule", caller("admin"))


def write_policy_file(directory: Path, name: str, rules: dict[str, str]) -> Path:
    path = directory / name
    if name.endswith(".json"):
        path.write_text(json.dumps(rules))
    else:
        path.write_text("".join(f'"{rule}": "{check}"\n' for rule, check in rules.items()))
    return path


@pytest.mark.parametrize("file_name", ["policy.yaml", "policy.json"])
@pytest.mark.parametrize("enforce_new_defaults", [True, False])
def test_policy_file_opens_a_rule_to_any_caller(
    tmp_path: Path, file_name: str, enforce_new_defaults: bool
) -> None:
    path = write_policy_file(tmp_path, file_name, {resource_provider.LIST: "@"})
    policy = Policy(policy_file=path, enforce_new_defaults=enforce_new_defaults)
    assert allowed(policy, resource_provider.LIST, caller("no_role"))
    assert not allowed(policy, resource_provider.SHOW, caller("no_role"))


@pytest.mark.parametrize("file_name", ["policy.yaml", "policy.json"])
@pytest.mark.parametrize("enforce_new_defaults", [True, False])
def test_policy_file_override_replaces_the_default_outright(
    tmp_path: Path, file_name: str, enforce_new_defaults: bool
) -> None:
    path = write_policy_file(tmp_path, file_name, {allocation.MANAGE: "role:auditor"})
    policy = Policy(policy_file=path, enforce_new_defaults=enforce_new_defaults)
    auditor = context_from_headers(
        {"x-auth-token": "user:p1", "x-roles": "auditor"}, "req-1", "noauth2"
    )
    assert allowed(policy, allocation.MANAGE, auditor)
    # Not even OR'd with the legacy role:admin default.
    assert not allowed(policy, allocation.MANAGE, caller("legacy_admin_token"))
    assert allowed(policy, allocation.LIST, caller("legacy_admin_token"))


def test_overriding_a_generic_rule_changes_every_rule_built_on_it(tmp_path: Path) -> None:
    path = write_policy_file(tmp_path, "policy.yaml", {"admin_or_service_api": "role:operator"})
    policy = Policy(policy_file=path, enforce_new_defaults=True)
    operator = context_from_headers(
        {"x-auth-token": "user:p1", "x-roles": "operator"}, "req-1", "noauth2"
    )
    assert allowed(policy, inventory.DELETE, operator)
    assert allowed(policy, trait.PROVIDER_DELETE, operator)
    assert not allowed(policy, inventory.DELETE, caller("admin"))
    assert not allowed(policy, reshaper.RESHAPE, operator)


def test_open_policy_file_lets_any_authenticated_caller_do_everything(tmp_path: Path) -> None:
    names = {rule.name for rule in policies.all_rules()} - {"admin_api"}
    path = write_policy_file(tmp_path, "open.yaml", dict.fromkeys(names, "@"))
    policy = Policy(policy_file=path, enforce_new_defaults=False)
    denied = [name for name in sorted(names) if not allowed(policy, name, caller("no_role"))]
    assert denied == []


def test_without_a_target_the_caller_acts_on_its_own_project(tmp_path: Path) -> None:
    path = write_policy_file(
        tmp_path, "policy.yaml", {resource_provider.SHOW: "project_id:%(project_id)s"}
    )
    policy = Policy(policy_file=path, enforce_new_defaults=True)
    reader = caller("project_reader")
    assert allowed(policy, resource_provider.SHOW, reader)
    assert allowed(policy, resource_provider.SHOW, reader, {"project_id": PROJECT})
    assert not allowed(policy, resource_provider.SHOW, reader, {"project_id": OTHER_PROJECT})


def test_default_target_carries_the_caller_user(tmp_path: Path) -> None:
    path = write_policy_file(tmp_path, "policy.yaml", {allocation.LIST: "user_id:%(user_id)s"})
    policy = Policy(policy_file=path, enforce_new_defaults=True)
    assert allowed(policy, allocation.LIST, caller("no_role"))
    assert not allowed(policy, allocation.LIST, caller("no_role"), {"user_id": "someone-else"})


def test_policy_file_changes_are_picked_up_without_restart(tmp_path: Path) -> None:
    path = write_policy_file(tmp_path, "policy.yaml", {trait.SHOW: "!"})
    policy = Policy(policy_file=path, enforce_new_defaults=True)
    assert not allowed(policy, trait.SHOW, caller("admin"))
    write_policy_file(tmp_path, "policy.yaml", {trait.SHOW: "@"})
    later = path.stat().st_mtime + 10
    os.utime(path, (later, later))
    assert allowed(policy, trait.SHOW, caller("no_role"))


def test_a_remembered_decision_is_forgotten_when_the_policy_file_changes(
    tmp_path: Path,
) -> None:
    path = write_policy_file(tmp_path, "policy.yaml", {trait.SHOW: "@"})
    policy = Policy(policy_file=path, enforce_new_defaults=True)
    asker = caller("no_role")
    assert allowed(policy, trait.SHOW, asker)
    assert allowed(policy, trait.SHOW, asker)
    write_policy_file(tmp_path, "policy.yaml", {trait.SHOW: "!"})
    later = path.stat().st_mtime + 10
    os.utime(path, (later, later))
    assert not allowed(policy, trait.SHOW, asker)


def test_decisions_depend_on_the_caller_not_on_the_request(tmp_path: Path) -> None:
    path = write_policy_file(tmp_path, "policy.yaml", {trait.SHOW: "role:reader"})
    policy = Policy(policy_file=path, enforce_new_defaults=True)
    reader = caller("project_reader")
    assert allowed(policy, trait.SHOW, reader)
    assert not allowed(policy, trait.SHOW, caller("no_role"))
    assert allowed(policy, trait.SHOW, reader)


def test_relative_policy_file_is_resolved_against_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_policy_file(tmp_path, "policy.yaml", {trait.LIST: "@"})
    monkeypatch.chdir(tmp_path)
    policy = Policy(policy_file=Path("policy.yaml"), enforce_new_defaults=True)
    assert allowed(policy, trait.LIST, caller("no_role"))


def test_missing_policy_file_stops_start_up(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        Policy(policy_file=tmp_path / "absent.yaml", enforce_new_defaults=True)


def test_malformed_policy_file_stops_start_up(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("placement:traits:list: [unclosed\n")
    with pytest.raises(ValueError, match="policy"):
        Policy(policy_file=path, enforce_new_defaults=True)


def test_no_policy_file_ignores_policy_files_lying_around(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # oslo.policy would otherwise look for policy.yaml and policy.d next to
    # config files and in the home directory.
    write_policy_file(tmp_path, "policy.yaml", {trait.LIST: "@"})
    (tmp_path / "policy.d").mkdir()
    write_policy_file(tmp_path / "policy.d", "open.yaml", {trait.LIST: "@"})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    policy = Policy(policy_file=None, enforce_new_defaults=True)
    assert not allowed(policy, trait.LIST, caller("no_role"))
