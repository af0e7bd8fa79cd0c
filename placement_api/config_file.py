"""An upstream-style ``placement.conf`` (INI) as a source of our settings.

``PLACEMENT_CONFIG_FILE`` names the file. It is read with oslo.config, as
upstream Placement reads it, into a private ``ConfigOpts`` (never the global
one). The options below are translated into settings fields; any
``PLACEMENT_*`` environment variable (or an explicit ``Settings(...)``
argument) wins over the file. ``[keystone_authtoken]`` is not a setting: the
same file is handed to keystonemiddleware whole (``placement_api.auth.keystone``).
The mapping is documented in ``docs/keystone.md``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from oslo_config import cfg
from pydantic.fields import FieldInfo
from pydantic_settings import PydanticBaseSettingsSource
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

ENV_VARIABLE = "PLACEMENT_CONFIG_FILE"

# (group, option, settings field). Every option defaults to None so only
# what the file sets reaches the settings.
_OPTIONS: tuple[tuple[str, cfg.Opt, str], ...] = (
    ("api", cfg.StrOpt("auth_strategy"), "auth_strategy"),
    ("placement_database", cfg.StrOpt("connection", secret=True), "database_url"),
    ("oslo_policy", cfg.StrOpt("policy_file"), "policy_file"),
    ("oslo_policy", cfg.BoolOpt("enforce_scope"), "enforce_scope"),
    ("oslo_policy", cfg.BoolOpt("enforce_new_defaults"), "enforce_new_defaults"),
    ("placement", cfg.IntOpt("max_allocation_candidates"), "max_allocation_candidates"),
    (
        "placement",
        cfg.BoolOpt("randomize_allocation_candidates"),
        "randomize_allocation_candidates",
    ),
)

# oslo.db URLs name a synchronous driver; ours are asyncio drivers.
_ASYNC_DRIVERS = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+asyncpg"}


class ConfigFileError(Exception):
    """A one-line reason the config file cannot be used, naming the file (and the
    section and key, when one is at fault)."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{ENV_VARIABLE}={path}: {reason}")


def load(path: Path) -> cfg.ConfigOpts:
    """The file parsed by oslo.config; options are registered by who reads them."""
    if not path.exists():
        raise ConfigFileError(path, "no such file")
    if not path.is_file():
        raise ConfigFileError(path, "not a file")
    conf = cfg.ConfigOpts()
    try:
        conf(
            args=[],
            project="placement",
            default_config_files=[str(path)],
            default_config_dirs=[],
            use_env=False,
        )
    except cfg.ConfigFilesNotFoundError:
        raise ConfigFileError(path, "no such file") from None
    except cfg.ConfigFilesPermissionDeniedError:
        raise ConfigFileError(path, "cannot read it: permission denied") from None
    except cfg.ConfigFileParseError as exc:
        reason = _parse_reason(exc.msg or str(exc))
        raise ConfigFileError(path, f"not an INI file: {reason}") from None
    except UnicodeDecodeError as exc:
        raise ConfigFileError(path, f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    return conf


def _parse_reason(message: str) -> str:
    """oslo's "at FILE:LINE, what" as "line LINE: what" (the file is named already)."""
    found = re.fullmatch(r"at .*:(\d+), (.*)", message, re.DOTALL)
    reason = f"line {found[1]}: {found[2]}" if found else message
    return " ".join(reason.split())


def read_options(
    path: Path, conf: cfg.ConfigOpts, group: str, options: Iterable[cfg.Opt]
) -> dict[str, Any]:
    """Each option registered and read, by dest: a value of the wrong type is
    named by its section and key (oslo.config names neither)."""
    values = {}
    for option in options:
        conf.register_opt(option, group=group)
        try:
            values[option.dest] = conf[group][option.dest]
        except cfg.ConfigSourceValueError as exc:
            reason = exc.__context__ if isinstance(exc.__context__, ValueError) else exc
            raise ConfigFileError(path, f"[{group}] {option.name}: {reason}") from None
    return values


def settings_values(path: Path) -> dict[str, Any]:
    """The settings fields the file sets, translated to our names and forms."""
    conf = load(path)
    values: dict[str, Any] = {}
    for group, option, field in _OPTIONS:
        value = read_options(path, conf, group, [option])[option.dest]
        if value is not None:
            values[field] = value
    if "database_url" in values:
        try:
            values["database_url"] = async_database_url(values["database_url"])
        except (ValueError, ArgumentError) as exc:
            raise ConfigFileError(path, f"[placement_database] connection: {exc}") from None
    if "policy_file" in values:
        # oslo.policy reads a relative policy_file beside the config file.
        values["policy_file"] = (path.parent / values["policy_file"]).resolve()
    return values


def async_database_url(connection: str) -> str:
    """An oslo.db ``[placement_database] connection`` as our asyncio URL.

    ``postgresql://``, ``postgresql+psycopg2://`` (any PostgreSQL driver)
    become ``postgresql+asyncpg://`` and ``sqlite://`` becomes
    ``sqlite+aiosqlite://``. libpq's ``sslmode`` becomes asyncpg's ``ssl``;
    ``client_encoding`` is dropped (asyncpg always speaks UTF-8). MySQL and
    MariaDB are refused: the service stores its data only in SQLite or
    PostgreSQL (``placement-api db import`` copies an upstream MySQL
    database into one).
    """
    url = make_url(connection)
    backend = url.get_backend_name()
    if backend not in _ASYNC_DRIVERS:
        raise ValueError(
            f"{backend} is not supported; use "
            "postgresql:// or sqlite:// (`placement-api db import --source URL` copies "
            "an upstream database into one)"
        )
    query = dict(url.query)
    if backend == "postgresql":
        query.pop("client_encoding", None)
        if "sslmode" in query:
            query["ssl"] = query.pop("sslmode")
    return url.set(drivername=_ASYNC_DRIVERS[backend], query=query).render_as_string(
        hide_password=False
    )


class ConfigFileSource(PydanticBaseSettingsSource):
    """Settings from ``PLACEMENT_CONFIG_FILE``, below the environment in priority."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        # Unused: __call__ reads the whole file at once.
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = self.current_state.get("config_file") or os.environ.get(ENV_VARIABLE)
        if not path:
            return {}
        return settings_values(Path(path))
