"""``placement-api status``: the upgrade check, as ``placement-status upgrade check``.

Each check gives Success, Warning or Failure; the command exits with the
worst one's code (0, 1, 2), so deployment tooling can gate an upgrade on it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum

from placement_api.auth.policy import Policy
from placement_api.db import migrations
from placement_api.operator import database
from placement_api.services.capacity_sources import CapacityFileError, CapacitySources
from placement_api.settings import Settings

_CONFIG_FILE = "Config file"


class Code(IntEnum):
    SUCCESS = 0
    WARNING = 1
    FAILURE = 2


@dataclass(frozen=True)
class CheckResult:
    name: str
    code: Code
    details: str


def run_checks(settings: Settings) -> list[CheckResult]:
    checks: list[tuple[str, Callable[[Settings], tuple[Code, str]]]] = [
        (_CONFIG_FILE, _config_file),
        ("Database reachable and schema current", _schema),
        ("Policy file", _policy_file),
        ("Authentication", _auth),
        ("Database backend", _backend),
        ("Allocation candidates cap", _candidates_cap),
        ("Capacity files", _capacity_files),
    ]
    results = []
    for name, check in checks:
        code, details = check(settings)
        results.append(CheckResult(name, code, details))
    return results


def config_file_failure(reason: str) -> CheckResult:
    """The settings could not be read (``config_file.ConfigFileError``)."""
    return CheckResult(_CONFIG_FILE, Code.FAILURE, reason)


def worst(results: list[CheckResult]) -> Code:
    return max((result.code for result in results), default=Code.SUCCESS)


def _schema(settings: Settings) -> tuple[Code, str]:
    url = settings.database_url
    try:
        database.require_existing(url)
        current = asyncio.run(migrations.current_revision(url))
    except database.DatabaseUnavailable as exc:
        return Code.FAILURE, str(exc)
    except database.CONNECTION_ERRORS as exc:
        return Code.FAILURE, str(database.unavailable(url, exc))
    head = migrations.head_revision(url)
    if current != head:
        return (
            Code.FAILURE,
            f"{database.display_url(url)} is at {current or 'no revision'}, the code at "
            f"{head}: run `placement-api db upgrade`",
        )
    return Code.SUCCESS, f"{database.display_url(url)} at {head}"


def _policy_file(settings: Settings) -> tuple[Code, str]:
    path = settings.policy_file
    try:
        Policy(
            policy_file=path,
            enforce_new_defaults=settings.enforce_new_defaults,
            enforce_scope=settings.enforce_scope,
        )
    except (OSError, ValueError) as exc:
        return Code.FAILURE, str(exc)
    if path is None:
        return Code.SUCCESS, "none: the defaults apply"
    if path.suffix == ".json":
        return (
            Code.WARNING,
            f"{path} is JSON, which oslo.policy deprecated: convert it with "
            "`oslopolicy-convert-json-to-yaml`",
        )
    return Code.SUCCESS, f"{path} parses"


def _auth(settings: Settings) -> tuple[Code, str]:
    if settings.auth_strategy == "noauth2":
        return (
            Code.WARNING,
            "noauth2 trusts any token: for tests only; set PLACEMENT_AUTH_STRATEGY=keystone",
        )
    # keystonemiddleware takes a fifth of a second to import: only when it is used.
    from placement_api.auth.keystone import KeystoneConfigError, check_configuration

    try:
        check_configuration(settings.config_file, settings.keystone_timeout)
    except KeystoneConfigError as exc:
        return Code.FAILURE, str(exc)
    return Code.SUCCESS, f"keystone: [keystone_authtoken] of {settings.config_file}"


def _config_file(settings: Settings) -> tuple[Code, str]:
    """Read with the settings: reached only when it parsed (or none is set)."""
    if settings.config_file is None:
        return Code.SUCCESS, "none: PLACEMENT_* variables and defaults"
    return Code.SUCCESS, f"{settings.config_file} parses"


def _backend(settings: Settings) -> tuple[Code, str]:
    if settings.is_sqlite:
        return (
            Code.WARNING,
            "SQLite serves one host; use PostgreSQL for several hosts behind a load balancer",
        )
    return Code.SUCCESS, "PostgreSQL"


def _candidates_cap(settings: Settings) -> tuple[Code, str]:
    cap = settings.max_allocation_candidates
    if cap == 0 or cap < -1:
        return Code.FAILURE, f"PLACEMENT_MAX_ALLOCATION_CANDIDATES={cap}: use -1 or a positive cap"
    return Code.SUCCESS, "no cap" if cap == -1 else f"at most {cap} per request"


def _capacity_files(settings: Settings) -> tuple[Code, str]:
    """Read as ``serve`` reads them: an edited file can be checked before a restart."""
    try:
        sources = CapacitySources.from_settings(settings)
    except CapacityFileError as exc:
        return Code.FAILURE, str(exc)
    named = [
        f"{path}: {what}"
        for path, what in (
            (settings.capacity_aggregates_file, f"{len(sources.zones.aggregates)} aggregates"),
            (settings.capacity_flavors_file, f"{len(sources.flavors)} flavors"),
        )
        if path is not None
    ]
    return Code.SUCCESS, "; ".join(named) or "none"
