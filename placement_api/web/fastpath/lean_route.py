"""A FastAPI route that calls its endpoint without FastAPI's per-request
dependency solving, when the endpoint's parameters need none of it: the
call plan is made once, when the route is built. The shape it relies on and
its fence: docs/architecture.md, The API: layers and modules.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from starlette.responses import Response

Handler = Callable[[Request], Coroutine[Any, Any, Response]]
# Dependant's fields as call_plan knows them: each is either followed by the
# plan or makes it give the route back to FastAPI.
PLANNED_FOR = {
    *("path_params", "query_params", "header_params", "cookie_params", "body_params"),
    *("dependencies", "name", "call", "request_param_name", "websocket_param_name"),
    *("http_connection_param_name", "response_param_name", "background_tasks_param_name"),
    *("security_scopes_param_name", "own_oauth_scopes", "parent_oauth_scopes"),
    *("use_cache", "path", "scope", "concurrency"),
}


def dependant_fields() -> set[str]:
    return {field.name for field in dataclasses.fields(Dependant)}


# Routes are built as the routers are imported, before start-up's checks.
_DEPENDANT_AS_PLANNED = dependant_fields() == PLANNED_FOR
Dependency = Callable[..., Coroutine[Any, Any, object]]


@dataclass(frozen=True)
class CallPlan:
    """What one call of an endpoint needs, in the order FastAPI resolves it:
    each dependency (the argument it fills, itself, its request argument),
    then the path parameters and the request."""

    dependencies: tuple[tuple[str, Dependency, str], ...]
    path_params: tuple[str, ...]
    request_param: str | None


def _needs_nothing_else(dependant: Dependant) -> bool:
    return not (
        dependant.query_params
        or dependant.header_params
        or dependant.cookie_params
        or dependant.body_params
        or dependant.http_connection_param_name
        or dependant.websocket_param_name
        or dependant.response_param_name
        or dependant.background_tasks_param_name
        or dependant.security_scopes_param_name
    )


def _plain_string(field: Any) -> bool:
    info = field.field_info
    return bool(info.annotation is str and not info.metadata and field.alias == field.name)


def _simple_dependency(dependant: Dependant) -> bool:
    """An ``async def`` of the request alone."""
    return (
        dependant.name is not None
        and inspect.iscoroutinefunction(dependant.call)
        and not dependant.dependencies
        and not dependant.path_params
        and dependant.request_param_name is not None
        and _needs_nothing_else(dependant)
    )


def _returns_response(endpoint: Callable[..., Any]) -> bool:
    returned = inspect.signature(endpoint, eval_str=True).return_annotation
    return inspect.isclass(returned) and issubclass(returned, Response)


def call_plan(dependant: Dependant, endpoint: Callable[..., Any]) -> CallPlan | None:
    """The plan for ``endpoint``, or None when FastAPI's own handler is needed."""
    subs = dependant.dependencies
    if not (
        _DEPENDANT_AS_PLANNED
        and inspect.iscoroutinefunction(endpoint)
        and _returns_response(endpoint)
        and _needs_nothing_else(dependant)
        and all(_plain_string(field) for field in dependant.path_params)
        and all(_simple_dependency(sub) for sub in subs)
        # FastAPI calls a dependency used twice only once per request.
        and len({id(sub.call) for sub in subs}) == len(subs)
    ):
        return None
    return CallPlan(
        dependencies=tuple(
            (str(sub.name), sub.call, str(sub.request_param_name))  # type: ignore[misc]
            for sub in subs
        ),
        path_params=tuple(field.name for field in dependant.path_params),
        request_param=dependant.request_param_name,
    )


class PlacementRoute(APIRoute):
    # The planned handler, which ``dispatch.Dispatcher`` calls without the
    # route's ASGI wrapping; None when FastAPI's own handler serves the route.
    lean_handler: Handler | None = None

    def get_route_handler(self) -> Handler:
        plan = call_plan(self.dependant, self.endpoint)
        if plan is None:
            return super().get_route_handler()
        endpoint = self.endpoint
        dependencies = plan.dependencies
        path_params = plan.path_params
        request_param = plan.request_param

        async def handler(request: Request) -> Response:
            arguments: dict[str, Any] = {}
            for name, dependency, argument in dependencies:
                arguments[name] = await dependency(**{argument: request})
            matched = request.path_params
            for name in path_params:
                arguments[name] = matched[name]
            if request_param is not None:
                arguments[request_param] = request
            response: Response = await endpoint(**arguments)
            return response

        self.lean_handler = handler
        return handler
