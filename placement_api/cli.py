"""``placement-api``: serve the API, manage the schema, write the OpenAPI document."""

from __future__ import annotations

import asyncio
import ipaddress
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
import uvicorn
from rich.console import Console

from placement_api import cli_migration
from placement_api.auth import NOAUTH2
from placement_api.db import migrations
from placement_api.db.engine import is_sqlite_url
from placement_api.db.outage import is_unavailable
from placement_api.http_protocol import PlacementHttpProtocol
from placement_api.settings import get_settings

app = typer.Typer(help="Placement API service.", no_args_is_help=True, add_completion=False)
db_app = typer.Typer(help="Database schema management.", no_args_is_help=True)
app.add_typer(db_app, name="db")
cli_migration.register(db_app)
console = Console(stderr=True)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _refuse_open_noauth2(host: str) -> None:
    settings = get_settings()
    if settings.auth_strategy == NOAUTH2 and not (
        _is_loopback(host) or settings.allow_insecure_noauth
    ):
        console.print(
            f"[red]Refusing to serve without authentication on {host}.[/red] With "
            "PLACEMENT_AUTH_STRATEGY=noauth2 anyone who reaches the port is an administrator. "
            "Use PLACEMENT_AUTH_STRATEGY=keystone (see docs/keystone.md), listen on "
            "127.0.0.1, or set PLACEMENT_ALLOW_INSECURE_NOAUTH=true to accept the risk."
        )
        raise typer.Exit(code=2)


def _ensure_sqlite_directory(url: str) -> None:
    if is_sqlite_url(url) and ":///" in url:
        path = url.split(":///", 1)[1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8778,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 1,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
) -> None:
    """Serve the API. SQLite databases are migrated first; PostgreSQL must be current.

    A database that does not answer yet is waited for, up to
    ``PLACEMENT_DATABASE_WAIT_TIMEOUT`` seconds."""
    _refuse_open_noauth2(host)
    settings = get_settings()
    _wait_for_database(settings.database_url, settings.database_wait_timeout)
    uvicorn.run(
        "placement_api.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        http=PlacementHttpProtocol,
        timeout_keep_alive=settings.keep_alive_timeout,
        timeout_graceful_shutdown=settings.graceful_shutdown_timeout,
    )


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
    """Apply schema migrations."""
    url = get_settings().database_url
    _ensure_sqlite_directory(url)
    migrations.upgrade(url, revision)


@db_app.command("current")
def db_current() -> None:
    """Print the schema revision of the database and whether it is the newest."""
    url = get_settings().database_url
    current = asyncio.run(migrations.current_revision(url))
    head = migrations.head_revision(url)
    state = "current" if current == head else f"out of date (head is {head})"
    typer.echo(f"{current or 'empty'} ({state})")


@app.command()
def openapi(
    output: Annotated[Path | None, typer.Option(help="Write to this file.")] = None,
    check: Annotated[
        Path | None, typer.Option(help="Fail if this file differs from the generated one.")
    ] = None,
) -> None:
    """Generate the OpenAPI document from the application."""
    from placement_api.openapi import render_openapi_yaml

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


def main() -> None:
    app()
