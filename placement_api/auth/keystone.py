"""``keystone`` authentication: keystonemiddleware's ``auth_token``, used as is.

The WSGI middleware runs in a worker thread on an environ holding only the
request's token headers, around an inner app that records it was reached;
the identity headers it writes become the request context, its refusals
Placement's 401 and 503. docs/keystone.md describes the behaviour.
"""

from __future__ import annotations

import asyncio
import io
import logging
import math
import sys
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from keystoneauth1 import exceptions as keystoneauth_errors
from keystonemiddleware import auth_token
from keystonemiddleware import exceptions as middleware_errors
from oslo_config import cfg
from oslo_context import context as oslo_context

from placement_api import config_file, errors
from placement_api.auth.context import RequestContext

LOG = logging.getLogger(__name__)

GROUP = "keystone_authtoken"
# The only request headers auth_token is given: the tokens it validates.
_TOKEN_HEADERS = ("x-auth-token", "x-storage-token", "x-service-token")
_REACHED = "placement.auth_token.reached"
# Threads validating tokens at once; a cached token takes well under a
# millisecond, so these only fill up while Keystone is slow.
_THREADS = 16
_UNAUTHORIZED = "The request you have made requires authentication."
_UNAVAILABLE = "The identity service (Keystone) could not validate the token; try again later."
NEEDS_CONFIG_FILE = (
    "PLACEMENT_AUTH_STRATEGY=keystone needs PLACEMENT_CONFIG_FILE: a placement.conf "
    "whose [keystone_authtoken] section configures keystonemiddleware"
)
# What building auth_token raises for a configuration it cannot use: an unknown
# auth_type, a plugin's missing option, memcache security without a key, ...
_REFUSALS = (
    middleware_errors.ConfigurationError,
    keystoneauth_errors.ClientException,
    cfg.Error,
    ValueError,
)

WsgiEnviron = dict[str, Any]
StartResponse = Callable[..., Any]


@dataclass
class _Outcome:
    """What one pass through auth_token left behind."""

    reached: bool = False
    status: int = 0
    headers: list[tuple[str, str]] = field(default_factory=list)


def _reached(environ: WsgiEnviron, start_response: StartResponse) -> Iterable[bytes]:
    environ[_REACHED] = True
    start_response("204 No Content", [])
    return []


def _environ(headers: Mapping[str, str], request_id: str) -> WsgiEnviron:
    environ: WsgiEnviron = {
        "REQUEST_METHOD": "GET",
        "SCRIPT_NAME": "",
        "PATH_INFO": "/",
        "QUERY_STRING": "",
        "SERVER_NAME": "placement",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "openstack.request_id": request_id,
    }
    for name in _TOKEN_HEADERS:
        value = headers.get(name)
        if value is not None:
            environ["HTTP_" + name.upper().replace("-", "_")] = value
    return environ


def _context(environ: WsgiEnviron, request_id: str) -> RequestContext:
    found = oslo_context.RequestContext.from_environ(environ)
    return RequestContext(
        user_id=found.user_id,
        project_id=found.project_id,
        roles=tuple(found.roles),
        system_scope=found.system_scope,
        request_id=request_id,
        domain_id=found.domain_id,
        user_domain_id=found.user_domain_id,
        project_domain_id=found.project_domain_id,
        is_admin_project=found.is_admin_project,
        service_user_id=found.service_user_id,
        service_project_id=found.service_project_id,
        service_roles=tuple(found.service_roles),
    )


def load_middleware_config(path: Path, timeout: float) -> Any:
    """The config file as keystonemiddleware reads it (oslo.config, private)."""
    conf = config_file.load(path)
    for group, options in auth_token.list_opts():
        # Read once here so a value of the wrong type is named by section and key.
        config_file.read_options(path, conf, group, options)
    if conf[GROUP].http_connect_timeout is None:
        conf.set_default("http_connect_timeout", math.ceil(timeout), group=GROUP)
    return conf


class KeystoneConfigError(Exception):
    """One line: why keystonemiddleware cannot start with the configuration."""


def check_configuration(config_path: Path | None, timeout: float) -> None:
    """Build the middleware as each worker does when it starts (``app.create_app``),
    so that a command can refuse a configuration in one line before any worker runs."""
    if config_path is None:
        raise KeystoneConfigError(NEEDS_CONFIG_FILE)
    # Its warnings (no www_authenticate_uri, ...) are the workers' to log, not a check's.
    middleware_log = logging.getLogger(auth_token.__name__)
    level = middleware_log.level
    middleware_log.setLevel(logging.ERROR)
    try:
        KeystoneAuthenticator(config_path, timeout=timeout).close()
    except config_file.ConfigFileError as exc:
        raise KeystoneConfigError(str(exc)) from None
    finally:
        middleware_log.setLevel(level)


class KeystoneAuthenticator:
    """Validates each request's token with keystonemiddleware's ``auth_token``."""

    def __init__(self, config_path: Path, *, timeout: float) -> None:
        conf = load_middleware_config(config_path, timeout)
        try:
            self._middleware = auth_token.AuthProtocol(_reached, {"oslo_config_config": conf})
        except _REFUSALS as exc:
            reason = " ".join(str(exc).split())
            raise config_file.ConfigFileError(config_path, f"[{GROUP}]: {reason}") from None
        self._timeout = timeout
        self._executor = ThreadPoolExecutor(_THREADS, thread_name_prefix="auth_token")

    async def authenticate(self, headers: Mapping[str, str], request_id: str) -> RequestContext:
        environ = _environ(headers, request_id)
        loop = asyncio.get_running_loop()
        try:
            outcome = await asyncio.wait_for(
                loop.run_in_executor(self._executor, self._run, environ), self._timeout
            )
        except TimeoutError:
            LOG.error("token validation took longer than %ss", self._timeout)
            raise errors.AuthServiceUnavailable(_UNAVAILABLE) from None
        except Exception:
            # A failure inside auth_token (Keystone answering garbage, a bad
            # service credential) denies the request; it is not our 500.
            LOG.exception("keystonemiddleware failed to validate a token")
            raise errors.AuthServiceUnavailable(_UNAVAILABLE) from None
        if outcome.reached:
            return _context(environ, request_id)
        if outcome.status == 401:
            raise errors.Unauthorized(_UNAUTHORIZED, headers=dict(outcome.headers))
        LOG.error("keystonemiddleware answered %s", outcome.status)
        raise errors.AuthServiceUnavailable(_UNAVAILABLE)

    def _run(self, environ: WsgiEnviron) -> _Outcome:
        outcome = _Outcome()

        def start_response(status: str, headers: list[tuple[str, str]], *_: object) -> None:
            outcome.status = int(status.split(" ", 1)[0])
            outcome.headers = [(n, v) for n, v in headers if n.lower() == "www-authenticate"]

        body = self._middleware(environ, start_response)
        try:
            for _chunk in body:
                pass
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()
        outcome.reached = bool(environ.get(_REACHED)) and _confirmed(environ)
        if environ.get(_REACHED) and not outcome.reached:
            # delay_auth_decision lets an invalid token through; we never serve it.
            outcome.status = 401
            outcome.headers = [
                ("WWW-Authenticate", f'Keystone uri="{self._middleware.www_authenticate_uri}"')
            ]
        return outcome

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


def _confirmed(environ: WsgiEnviron) -> bool:
    user = environ.get("HTTP_X_IDENTITY_STATUS")
    service = environ.get("HTTP_X_SERVICE_IDENTITY_STATUS", "Confirmed")
    return user == "Confirmed" and service == "Confirmed"
