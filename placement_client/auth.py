"""Where the client's credentials and endpoint come from, loaded with keystoneauth1.

Four sources, the first one configured wins:

1. an INI file with a Nova-style section (``[placement]``: ``auth_type``,
   ``auth_url``, ``username``, ..., ``region_name``, ``valid_interfaces``,
   ``endpoint_override``), read with keystoneauth1's oslo.config helpers;
2. a static token (``--token``): sent as ``X-Auth-Token`` as it is, for
   ``noauth2`` or a token made elsewhere (keystoneauth1's ``admin_token``);
3. ``OS_*`` environment variables as the ``openstack`` CLI reads them, when
   ``OS_AUTH_URL`` or ``OS_AUTH_TYPE`` is set;
4. nothing: no token is sent.

Each gives a keystoneauth1 ``Adapter``: its session caches the token and
re-authenticates when it expires, and its endpoint is looked up in the
catalog (service type ``placement``) unless a URL is given.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from keystoneauth1 import adapter, exceptions, loading, session, token_endpoint
from keystoneauth1.loading import opts
from oslo_config import cfg

SERVICE_TYPE = "placement"
# Where a development API listens (``make run``): used with a static token and no URL.
DEFAULT_API_URL = "http://127.0.0.1:8778"
DEFAULT_SECTION = "placement"
# Nova's defaults for its [placement] section.
CONF_VALID_INTERFACES = ["internal", "public"]
ENV_INTERFACE = "public"
KEYSTONE_VARIABLES = ("OS_AUTH_URL", "OS_AUTH_TYPE", "OS_AUTH_PLUGIN")


# What a wrong set-up raises while the credentials are loaded (before any request).
SETUP_ERRORS = (ValueError, OSError, exceptions.ClientException, cfg.Error)


@dataclass(frozen=True)
class AuthOptions:
    """What a caller's settings say about reaching Placement."""

    api_url: str | None = None
    token: str | None = None
    config_file: Path | None = None
    section: str = DEFAULT_SECTION


def load_adapter(options: AuthOptions, environ: Mapping[str, str] | None = None) -> adapter.Adapter:
    environ = os.environ if environ is None else environ
    if options.config_file is not None:
        return from_config_file(options.config_file, options.section, options.api_url)
    if options.token is not None:
        return from_static_token(options.api_url, options.token)
    if keystone_in_environment(environ):
        return from_environment(environ, options.api_url)
    return from_static_token(options.api_url, None)


def keystone_in_environment(environ: Mapping[str, str]) -> bool:
    return any(environ.get(name) for name in KEYSTONE_VARIABLES)


def from_static_token(api_url: str | None, token: str | None) -> adapter.Adapter:
    api_url = api_url or DEFAULT_API_URL
    # keystoneauth1's admin_token plugin; with no token it sends no X-Auth-Token.
    plugin = token_endpoint.Token(endpoint=api_url, token=token)
    return adapter.Adapter(
        session.Session(auth=plugin), service_type=SERVICE_TYPE, endpoint_override=api_url
    )


def from_environment(environ: Mapping[str, str], api_url: str | None = None) -> adapter.Adapter:
    """Credentials from ``OS_*`` variables, the names the ``openstack`` CLI reads."""
    loader: loading.BaseLoader[Any] = loading.get_plugin_loader(_auth_type(environ))

    def from_variables(opt: opts.Opt) -> object:
        for name in opt.argparse_envvars:
            if environ.get(name):
                return environ[name]
        return opt.default

    plugin = loader.load_from_options_getter(from_variables)
    ks_session = loading.session.Session().load_from_options(
        auth=plugin,
        insecure=environ.get("OS_INSECURE", "").lower() in {"1", "true", "yes"},
        cacert=environ.get("OS_CACERT"),
        cert=environ.get("OS_CERT"),
        key=environ.get("OS_KEY"),
    )
    return adapter.Adapter(
        ks_session,
        service_type=SERVICE_TYPE,
        interface=environ.get("OS_INTERFACE") or ENV_INTERFACE,
        region_name=environ.get("OS_REGION_NAME"),
        endpoint_override=api_url,
    )


def _auth_type(environ: Mapping[str, str]) -> str:
    named = environ.get("OS_AUTH_TYPE") or environ.get("OS_AUTH_PLUGIN")
    if named:
        return named
    if environ.get("OS_APPLICATION_CREDENTIAL_ID") or environ.get("OS_APPLICATION_CREDENTIAL_NAME"):
        return "v3applicationcredential"
    return "password"


def from_config_file(path: Path, section: str, api_url: str | None = None) -> adapter.Adapter:
    """A Nova-style ``[placement]`` section: auth, session and adapter options."""
    if not path.is_file():
        raise FileNotFoundError(f"auth config file {path} does not exist")
    conf = cfg.ConfigOpts()
    loading.register_auth_conf_options(conf, section)
    loading.register_session_conf_options(conf, section)
    loading.register_adapter_conf_options(conf, section, include_deprecated=False)
    conf.set_default("service_type", SERVICE_TYPE, group=section)
    conf.set_default("valid_interfaces", CONF_VALID_INTERFACES, group=section)
    conf(args=[], project="placement-client", default_config_files=[str(path)])
    plugin = loading.load_auth_from_conf_options(conf, section)
    if plugin is None:
        raise ValueError(f"[{section}] of {path} names no auth_type")
    ks_session = loading.load_session_from_conf_options(conf, section, auth=plugin)
    found = loading.load_adapter_from_conf_options(conf, section, session=ks_session, auth=plugin)
    if api_url:
        found.endpoint_override = api_url
    return found
