"""``placement-api``: serve the API, manage the schema, write the OpenAPI document."""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
import uvicorn
from rich.console import Console
from rich.markup import escape
from uvicorn.supervisors import Multiprocess

from placement_api.auth.context import KEYSTONE, NOAUTH2
from placement_api.cli import capacity as cli_capacity
from placement_api.cli import dashboard as cli_dashboard
from placement_api.cli import fleet as cli_fleet
from placement_api.cli import migration as cli_migration
from placement_api.cli import operator as cli_operator
from placement_api.cli.settings import command_settings, valid_settings
from placement_api.config_file import ConfigFileError
from placement_api.db import migrations
from placement_api.db.engine import is_sqlite_url
from placement_api.db.outage import is_unavailable
from placement_api.observability.logs import logging_config
from placement_api.observability.multiproc import multiprocess_directory, set_aside
from placement_api.operator import database
from placement_api.services.capacity_sources import CapacityFileError, CapacitySources
from placement_api.serving.addresses import is_loopback
from placement_api.serving.capabilities import protocol_gaps, supervisor_gaps
from placement_api.serving.http_protocol import PlacementHttpProtocol
from placement_api.serving.supervisor import Supervisor
from placement_api.serving.worker_sockets import reuse_port_socket, reuse_port_supported
from placement_api.settings import Settings, get_settings
from placement_client.environment import known_variables, warn_unknown_variables
from placement_client.log_levels import LogLevel
from placement_client.output import Format, FormatOption, chosen
from placement_client.program_version import VersionOption

app = typer.Typer(help="Placement API service.", no_args_is_help=True, add_completion=False)
db_app = typer.Typer(help="Database schema management.", no_args_is_help=True)
app.add_typer(db_app, name="db")
cli_migration.register(db_app)
cli_dashboard.register(app)
cli_fleet.register(app)
app.add_typer(cli_operator.policy_app, name="policy")
console = Console(stderr=True)
APP_FACTORY = "placement_api.app:create_app"


@app.callback()
def _program(version: VersionOption = False) -> None:
    """Placement API service."""


def _refuse_open_noauth2(host: str) -> None:
    settings = get_settings()
    if settings.auth_strategy == NOAUTH2 and not (
        is_loopback(host) or settings.allow_insecure_noauth
    ):
        console.print(
            f"[red]Refusing to serve without authentication on {host}.[/red] With "
            "PLACEMENT_AUTH_STRATEGY=noauth2 anyone who reaches the port is an administrator. "
            "Use PLACEMENT_AUTH_STRATEGY=keystone (see docs/keystone.md), listen on "
            "127.0.0.1, or set PLACEMENT_ALLOW_INSECURE_NOAUTH=true to accept the risk."
        )
        raise typer.Exit(code=2)


def _check_capacity_files(settings: Settings) -> None:
    """Every worker reads them as it starts: read here first, a bad one is one line
    and exit 2, not a traceback (or workers that die and are restarted, forever)."""
    try:
        CapacitySources.from_settings(settings)
    except CapacityFileError as exc:
        console.print(f"[red]invalid capacity file:[/red] {exc}", soft_wrap=True)
        raise typer.Exit(code=2) from None


def _check_keystone(settings: Settings) -> None:
    """Every worker builds keystonemiddleware as it starts: built here first, a
    configuration it refuses is one line and exit 2, not workers dying in a loop."""
    if settings.auth_strategy != KEYSTONE:
        return
    # keystonemiddleware takes a fifth of a second to import: only when it is used.
    from placement_api.auth.keystone import KeystoneConfigError, check_configuration

    try:
        check_configuration(settings.config_file, settings.keystone_timeout)
    except KeystoneConfigError as exc:
        console.print(
            f"[red]invalid keystone configuration:[/red] {escape(str(exc))}", soft_wrap=True
        )
        raise typer.Exit(code=2) from None


@contextmanager
def database_errors(url: str) -> Iterator[None]:
    """One line naming the database and what to check, instead of a traceback."""
    try:
        yield
    except database.DatabaseUnavailable as exc:
        console.print(f"[red]error:[/red] {exc}", soft_wrap=True)
        raise typer.Exit(code=2) from None
    except database.CONNECTION_ERRORS as exc:
        console.print(f"[red]error:[/red] {database.unavailable(url, exc)}", soft_wrap=True)
        raise typer.Exit(code=2) from None


def _ensure_sqlite_directory(url: str) -> None:
    if is_sqlite_url(url) and ":///" in url:
        path = url.split(":///", 1)[1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)


@app.command()
def serve(
    host: Annotated[
        str, typer.Option(envvar="PLACEMENT_HOST", help="Address to listen on.")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, envvar="PLACEMENT_PORT", help="Port to listen on.")
    ] = 8778,
    workers: Annotated[
        int, typer.Option(min=1, envvar="PLACEMENT_WORKERS", help="Worker processes.")
    ] = 1,
    log_level: Annotated[
        LogLevel,
        typer.Option(
            envvar="PLACEMENT_LOG_LEVEL", case_sensitive=False, help="Lowest level logged."
        ),
    ] = LogLevel.INFO,
) -> None:
    """Serve the API. SQLite databases are migrated first; PostgreSQL must be current.

    A database that does not answer yet is waited for, up to
    ``PLACEMENT_DATABASE_WAIT_TIMEOUT`` seconds."""
    settings = command_settings()
    _refuse_open_noauth2(host)
    _check_capacity_files(settings)
    _check_keystone(settings)
    with database_errors(settings.database_url):
        _wait_for_database(settings.database_url, settings.database_wait_timeout)
    with ExitStack() as stack:
        if settings.metrics_enabled or settings.metrics_port is not None:
            stack.enter_context(multiprocess_directory())
        if settings.metrics_port is not None:
            from placement_api.observability.metrics_port import start_metrics_port

            start_metrics_port(settings, settings.metrics_port)
        options = _uvicorn_options(settings, host, port, workers, log_level.value)
        if workers > 1:
            _supervise(uvicorn.Config(APP_FACTORY, **options), settings.worker_reuse_port)
        else:
            uvicorn.run(APP_FACTORY, **options)


def http_protocol() -> type[asyncio.Protocol] | str:
    """Ours, or uvicorn's own when what ours relies on changed (one warning)."""
    gaps = protocol_gaps()
    if not gaps:
        return PlacementHttpProtocol
    logging.getLogger(__name__).warning(
        "%s; serving with uvicorn's own httptools protocol", "; ".join(gaps)
    )
    return "httptools"


def _uvicorn_options(
    settings: Settings, host: str, port: int, workers: int, log_level: str
) -> dict[str, Any]:
    return {
        "factory": True,
        "host": host,
        "port": port,
        "workers": workers,
        "log_level": log_level,
        "log_config": logging_config(settings.log_format, log_level),
        "access_log": False,
        "http": http_protocol(),
        "timeout_keep_alive": settings.keep_alive_timeout,
        "timeout_graceful_shutdown": settings.graceful_shutdown_timeout,
        "timeout_worker_healthcheck": settings.worker_healthcheck_timeout,
    }


def _supervise(config: uvicorn.Config, reuse_port: bool) -> None:
    """Several workers under ``serving.supervisor``, each listening on its own
    socket when it can (see worker_sockets), else all on one."""
    supervisor = _supervisor_class()
    if not (reuse_port and reuse_port_supported()):
        supervisor(config, sockets=[config.bind_socket()]).run()
        return
    try:
        sock = reuse_port_socket(config.host, config.port)
    except OSError as exc:
        console.print(f"[red]error:[/red] cannot listen on {config.host}:{config.port}: {exc}")
        raise typer.Exit(code=2) from None
    logging.getLogger(__name__).info(
        "Serving on %s:%s, each of %d workers on its own socket (SO_REUSEPORT)",
        config.host,
        config.port,
        config.workers,
    )
    supervisor(config, sockets=[sock]).run()


def _supervisor_class() -> type[Multiprocess]:
    """Ours, or uvicorn's own when what ours relies on changed (one warning)."""
    gaps = supervisor_gaps()
    if not gaps:
        return Supervisor
    logging.getLogger(__name__).warning(
        "%s; supervising with uvicorn's own (a dead worker may wait for another's health check)",
        "; ".join(gaps),
    )
    return Multiprocess


def _wait_for_database(url: str, timeout: float) -> None:
    """Migrate SQLite, or check PostgreSQL's schema is current, retrying while
    the database cannot be reached; exit when it is out of date or still
    unreachable after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if is_sqlite_url(url):
                _ensure_sqlite_directory(url)
                migrations.upgrade(url)
                return
            if migrations.is_up_to_date(url):
                return
            console.print(
                "[red]The database schema is not current.[/red] "
                "Run `placement-api db upgrade` before starting the service."
            )
            raise typer.Exit(code=2)
        except Exception as exc:
            if not is_unavailable(exc) or time.monotonic() >= deadline:
                raise
            console.print(f"Waiting for the database: {exc}")
            time.sleep(1)


@db_app.command("upgrade")
def db_upgrade(
    revision: Annotated[str, typer.Argument(help="Target revision.")] = "head",
) -> None:
    """Apply schema migrations (creating a SQLite file and its directory)."""
    url = command_settings().database_url
    with database_errors(url), console.status(f"upgrading {database.display_url(url)}"):
        _ensure_sqlite_directory(url)
        migrations.upgrade(url, revision)


@db_app.command("current")
def db_current() -> None:
    """Print the schema revision and whether it is the newest.

    Exit 0 only when it is, 1 when the database is empty or out of date, 2 when it
    cannot be read."""
    url = command_settings().database_url
    with database_errors(url):
        database.require_existing(url)
        current = asyncio.run(migrations.current_revision(url))
    head = migrations.head_revision(url)
    state = "current" if current == head else f"out of date (head is {head})"
    typer.echo(f"{current or 'empty'} ({state})")
    if current != head:
        raise typer.Exit(code=1)


@app.command()
def status(fmt: FormatOption = Format.TABLE) -> None:
    """Upgrade check: database, schema, policy file and settings.

    Checks that the database is reachable, the schema current, the policy file valid
    and the settings sane. Exit 0 when all succeed, 1 on a warning, 2 on a failure."""
    try:
        settings = valid_settings()
    except ConfigFileError as exc:
        cli_operator.status_without_settings(str(exc), fmt)
    cli_operator.status(settings, fmt)


@app.command()
def audit(
    fix: cli_operator.FixOption = False,
    as_json: cli_operator.JsonOption = False,
    fmt: FormatOption = Format.TABLE,
) -> None:
    """Find rows the service's invariants forbid (--fix repairs what it can).

    Usage that differs from the sum of allocations, providers over capacity,
    consumers without allocations, allocations on providers that no longer exist.
    Exit 0 when none remain, 1 otherwise."""
    settings = command_settings()
    with database_errors(settings.database_url):
        cli_operator.audit(settings, fix=fix, fmt=chosen(fmt, as_json))


@app.command()
def capacity(
    flavor: cli_capacity.FlavorOption = None,
    by: cli_capacity.ByOption = "az",
    as_json: cli_operator.JsonOption = False,
    include_unavailable: cli_capacity.IncludeUnavailableOption = False,
) -> None:
    """How many instances of each flavor still fit, by zone, aggregate or host.

    With free capacity per class: the GET /capacity report, read from the database.
    Hosts disabled or down are left out (and counted apart) unless --include-unavailable."""
    settings = command_settings()
    with database_errors(settings.database_url):
        cli_capacity.capacity(
            settings,
            options=flavor or [],
            by=by,
            as_json=as_json,
            include_unavailable=include_unavailable,
        )


@cli_operator.policy_app.command("list")
def policy_list(as_json: cli_operator.JsonOption = False, fmt: FormatOption = Format.TABLE) -> None:
    """Every rule and the check enforced now (policy file over defaults)."""
    try:
        cli_operator.policy_list(command_settings(), fmt=chosen(fmt, as_json))
    except (OSError, ValueError) as exc:
        console.print(f"[red]error:[/red] {exc}", soft_wrap=True)
        raise typer.Exit(code=2) from None


@cli_operator.policy_app.command("sample")
def policy_sample(output: cli_operator.OutputOption = None) -> None:
    """A sample policy file: every rule commented out at its default.

    As oslopolicy-sample-generator writes it (also: `oslopolicy-sample-generator
    --namespace placement`)."""
    cli_operator.policy_sample(output)


@app.command()
def openapi(
    output: Annotated[Path | None, typer.Option(help="Write to this file.")] = None,
    check: Annotated[
        Path | None, typer.Option(help="Fail if this file differs from the generated one.")
    ] = None,
) -> None:
    """Generate the OpenAPI document from the application."""
    from placement_api.openapi.document import render_openapi_yaml

    document = render_openapi_yaml()
    if check is not None:
        if not check.exists() or check.read_text() != document:
            console.print(f"[red]{check} is out of date[/red]: run `make openapi`.")
            raise typer.Exit(code=1)
        return
    if output is None:
        sys.stdout.write(document)
    else:
        output.write_text(document)


# Not a setting: the API's URL as the docs' shell sessions and curl examples name it.
DOCUMENTED_VARIABLES = ("PLACEMENT_URL",)


def main() -> None:
    set_aside()
    known = known_variables("PLACEMENT_", Settings, app, *DOCUMENTED_VARIABLES)
    warn_unknown_variables("placement-api", "PLACEMENT_", known)
    app()
