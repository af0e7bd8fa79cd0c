"""Who is calling: the request context, and ``noauth2``, which trusts the headers.

``Authenticator`` is the seam between an authentication strategy and the
rest of the service; ``keystone`` is the other one (``auth.keystone``).
docs/keystone.md, "What noauth2 means", gives noauth2's rules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Protocol

from oslo_context import context as oslo_context

from placement_api import errors

NOAUTH2 = "noauth2"
KEYSTONE = "keystone"

_MISSING_TOKEN = (
    "The server could not verify that the request is authorized: "
    "no credentials (X-Auth-Token header) were supplied."
)


@dataclass(frozen=True)
class RequestContext:
    user_id: str | None
    project_id: str | None
    roles: tuple[str, ...]
    system_scope: str | None
    request_id: str
    domain_id: str | None = None
    user_domain_id: str | None = None
    project_domain_id: str | None = None
    is_admin_project: bool = True
    service_user_id: str | None = None
    service_project_id: str | None = None
    service_roles: tuple[str, ...] = ()

    def policy_identity(self) -> tuple[object, ...]:
        """Everything of the caller that policy decisions depend on: every
        field but the request id."""
        identity: tuple[object, ...] = _policy_identity(self)
        return identity

    def policy_credentials(self) -> dict[str, object]:
        """The credentials oslo.policy's ``enforce`` expects.

        Built by oslo.context so the keys (and their defaults, such as
        ``is_admin_project``) are exactly what keystone-fed services pass.
        A fresh dict each call: oslo.policy writes into the one it gets.
        """
        context = oslo_context.RequestContext(
            user_id=self.user_id,
            project_id=self.project_id,
            roles=list(self.roles),
            system_scope=self.system_scope,
            request_id=self.request_id,
            domain_id=self.domain_id,
            user_domain_id=self.user_domain_id,
            project_domain_id=self.project_domain_id,
            is_admin_project=self.is_admin_project,
            service_user_id=self.service_user_id,
            service_project_id=self.service_project_id,
            service_roles=list(self.service_roles),
            overwrite=False,
        )
        return dict(context.to_policy_values())


_POLICY_FIELDS = tuple(f.name for f in fields(RequestContext) if f.name != "request_id")
# One C call that reads them all, in that order, into a tuple.
_policy_identity = attrgetter(*_POLICY_FIELDS)


class Authenticator(Protocol):
    async def authenticate(self, headers: Mapping[str, str], request_id: str) -> RequestContext:
        """The caller's context; raise ``Unauthorized`` (or 503) when it cannot be had."""
        ...


class NoAuth2Authenticator:
    async def authenticate(self, headers: Mapping[str, str], request_id: str) -> RequestContext:
        return context_from_headers(headers, request_id, NOAUTH2)


HeaderLookup = Mapping[str, str]
Strategy = Callable[[HeaderLookup, str], RequestContext]


def context_from_headers(
    headers: Mapping[str, str], request_id: str, strategy: str
) -> RequestContext:
    """Authenticate the request with ``strategy``; raise ``Unauthorized`` if it fails."""
    try:
        authenticate = _STRATEGIES[strategy]
    except KeyError:
        raise ValueError(f"unknown auth strategy {strategy!r}") from None
    lowered = {name.lower(): value for name, value in headers.items()}
    return authenticate(lowered, request_id)


def _noauth2(headers: HeaderLookup, request_id: str) -> RequestContext:
    token = headers.get("x-auth-token")
    if token is None:
        raise errors.Unauthorized(_MISSING_TOKEN)
    user_id, _, token_project = token.partition(":")
    system_scope = headers.get("openstack-system-scope") or None
    return RequestContext(
        user_id=user_id,
        project_id=_project_id(headers, token_project or user_id, system_scoped=bool(system_scope)),
        roles=_roles(headers, user_id),
        system_scope=system_scope,
        request_id=request_id,
    )


def _roles(headers: HeaderLookup, user_id: str) -> tuple[str, ...]:
    listed = headers.get("x-roles")
    if listed is None:
        return ("admin",) if user_id == "admin" else ()
    return tuple(role for role in (part.strip() for part in listed.split(",")) if role)


def _project_id(headers: HeaderLookup, token_project: str, *, system_scoped: bool) -> str | None:
    # A system-scoped token belongs to no project, so the token's project part
    # is ignored; an explicit project header still counts.
    explicit = headers.get("x-project-id")
    if explicit is not None:
        return explicit
    if not system_scoped:
        return token_project
    return headers.get("x-tenant-id", headers.get("x-tenant"))


_STRATEGIES: dict[str, Strategy] = {NOAUTH2: _noauth2}
