"""The noauth2 strategy: how headers become a request context."""

from __future__ import annotations

import pytest
from starlette.datastructures import Headers

from placement_api import errors
from placement_api.auth.context import RequestContext, context_from_headers


def authenticate(headers: dict[str, str]) -> RequestContext:
    return context_from_headers(headers, "req-test", "noauth2")


def test_missing_token_is_unauthorized() -> None:
    with pytest.raises(errors.Unauthorized) as raised:
        authenticate({"x-roles": "admin", "x-project-id": "p"})
    assert raised.value.status == 401
    assert "X-Auth-Token" in raised.value.detail


@pytest.mark.parametrize(
    ("token", "user_id", "project_id", "roles"),
    [
        ("admin", "admin", "admin", ("admin",)),
        ("admin:admin", "admin", "admin", ("admin",)),
        ("admin:ops", "admin", "ops", ("admin",)),
        ("user", "user", "user", ()),
        ("alice:tenant-a", "alice", "tenant-a", ()),
        # Only the first colon separates user from project.
        ("alice:tenant:a", "alice", "tenant:a", ()),
        # An empty project part falls back to the user, as upstream's does.
        ("alice:", "alice", "alice", ()),
        # A present but empty token still authenticates (upstream only checks
        # that the header exists), as an anonymous user with no roles.
        ("", "", "", ()),
    ],
)
def test_token_gives_user_project_and_default_roles(
    token: str, user_id: str, project_id: str, roles: tuple[str, ...]
) -> None:
    context = authenticate({"x-auth-token": token})
    assert (context.user_id, context.project_id, context.roles) == (user_id, project_id, roles)
    assert context.system_scope is None
    assert context.request_id == "req-test"


def test_x_roles_replaces_the_admin_token_default() -> None:
    context = authenticate({"x-auth-token": "admin", "x-roles": "reader"})
    assert context.roles == ("reader",)


def test_x_roles_are_trimmed_and_empty_entries_dropped() -> None:
    context = authenticate({"x-auth-token": "user", "x-roles": " admin , member,,reader "})
    assert context.roles == ("admin", "member", "reader")


def test_empty_x_roles_means_no_roles_even_for_admin() -> None:
    assert authenticate({"x-auth-token": "admin", "x-roles": ""}).roles == ()


def test_x_project_id_overrides_the_token_project() -> None:
    context = authenticate({"x-auth-token": "user:from-token", "x-project-id": "from-header"})
    assert context.project_id == "from-header"


def test_x_tenant_id_does_not_override_the_token_project() -> None:
    context = authenticate({"x-auth-token": "user:from-token", "x-tenant-id": "from-header"})
    assert context.project_id == "from-token"


def test_system_scope_drops_the_token_project() -> None:
    context = authenticate(
        {"x-auth-token": "user:proj", "x-roles": "admin", "openstack-system-scope": "all"}
    )
    assert context.system_scope == "all"
    assert context.project_id is None
    assert context.user_id == "user"


def test_system_scope_keeps_an_explicit_project_header() -> None:
    context = authenticate(
        {"x-auth-token": "user", "openstack-system-scope": "all", "x-tenant-id": "t1"}
    )
    assert context.project_id == "t1"


def test_empty_system_scope_header_is_not_system_scoped() -> None:
    context = authenticate({"x-auth-token": "user:proj", "openstack-system-scope": ""})
    assert context.system_scope is None
    assert context.project_id == "proj"


def test_header_names_are_case_insensitive() -> None:
    context = authenticate(
        {"X-Auth-Token": "user:proj", "X-Roles": "service", "OpenStack-System-Scope": "all"}
    )
    assert (context.user_id, context.roles, context.system_scope) == ("user", ("service",), "all")


def test_starlette_request_headers_are_accepted() -> None:
    raw = [(b"x-auth-token", b"alice:p1"), (b"x-roles", b"reader")]
    context = context_from_headers(Headers(raw=raw), "req-1", "noauth2")
    assert (context.user_id, context.project_id, context.roles) == ("alice", "p1", ("reader",))


def test_unknown_strategy_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="keystone"):
        context_from_headers({"x-auth-token": "admin"}, "req-1", "keystone")


def test_policy_credentials_carry_what_oslo_policy_checks() -> None:
    context = authenticate(
        {"x-auth-token": "bob:p1", "x-roles": "reader,member", "openstack-system-scope": "all"}
    )
    credentials = context.policy_credentials()
    assert credentials["user_id"] == "bob"
    assert credentials["project_id"] is None
    assert credentials["roles"] == ["reader", "member"]
    assert credentials["system_scope"] == "all"
    assert credentials["domain_id"] is None
    assert credentials["is_admin_project"] is True


def test_policy_credentials_are_a_fresh_dict_each_time() -> None:
    context = authenticate({"x-auth-token": "admin"})
    first = context.policy_credentials()
    first["roles"] = ["tampered"]
    first["system"] = "all"
    assert context.policy_credentials()["roles"] == ["admin"]
    assert "system" not in context.policy_credentials()
