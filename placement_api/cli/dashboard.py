"""``placement-api dashboard``: serve the live capacity page (docs/dashboard.md)."""

from __future__ import annotations

from pathlib import Path
from types import FrameType
from typing import Annotated

import typer
import uvicorn
from rich.console import Console

from placement_api.dashboard.flavors import parse_flavors
from placement_api.dashboard.hosts import allowed_hosts
from placement_api.dashboard.live import LiveOptions, LiveSnapshot
from placement_api.dashboard.web import create_dashboard_app
from placement_api.serving.addresses import is_loopback
from placement_client import AuthOptions, PlacementClient
from placement_client.auth import SETUP_ERRORS

console = Console(stderr=True)
DEFAULT_PORT = 8780
SHUTDOWN_SECONDS = 2


def dashboard(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = DEFAULT_PORT,
    api_url: Annotated[
        str | None, typer.Option(help="Placement API root URL (default: the catalog's).")
    ] = None,
    token: Annotated[
        str | None, typer.Option(help="Static X-Auth-Token (noauth2); else Keystone (OS_*).")
    ] = None,
    auth_config: Annotated[
        Path | None, typer.Option(help="INI file with a Nova-style \\[placement] section.")
    ] = None,
    auth_section: Annotated[str, typer.Option(help="Section of --auth-config.")] = "placement",
    flavor: Annotated[
        list[str] | None,
        typer.Option(help="NAME=RC:N,... whose fits are shown; repeat for more flavors."),
    ] = None,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            envvar="PLACEMENT_DASHBOARD_ALLOWED_HOSTS",
            help="A name (or address) browsers reach the page by, besides localhost and "
            "--host; repeat for more. Requests for any other Host get a 400 (DNS rebinding).",
        ),
    ] = None,
    allow_remote: Annotated[
        bool,
        typer.Option(help="Listen on a non-loopback address (viewers are not authenticated)."),
    ] = False,
    debounce: Annotated[
        float, typer.Option(min=0.0, help="Seconds a burst of changes settles before a re-read.")
    ] = LiveOptions.debounce,
    liveness_interval: Annotated[
        float, typer.Option(min=1.0, help="Seconds between reads of GET /heartbeats.")
    ] = LiveOptions.liveness_interval,
    history_step: Annotated[
        float,
        typer.Option(min=1.0, help="Seconds between the usage history's samples (in memory)."),
    ] = LiveOptions.history_step,
    history_hours: Annotated[
        float, typer.Option(min=0.1, max=168.0, help="Hours of usage history kept (in memory).")
    ] = LiveOptions.history_hours,
) -> None:
    """Serve a read-only page of capacity, kept live from the change feed.

    It shows fits per flavor, usage per host, hosts down and recent changes."""
    if not (is_loopback(host) or allow_remote):
        console.print(
            f"[red]Refusing to listen on {host}.[/red] Anyone who reaches the page sees the "
            "cloud's capacity with this command's credentials: keep it on 127.0.0.1 (reach it "
            "through an SSH tunnel or an authenticating proxy) or pass --allow-remote."
        )
        raise typer.Exit(code=2)
    try:
        flavors = parse_flavors(flavor or [])
        options = AuthOptions(
            api_url=api_url, token=token, config_file=auth_config, section=auth_section
        )
        client = PlacementClient.connect(options)
    except (*SETUP_ERRORS, ValueError) as error:
        console.print(f"[red]error:[/red] {error}", soft_wrap=True)
        raise typer.Exit(code=2) from None
    live_options = LiveOptions(
        debounce=debounce,
        liveness_interval=liveness_interval,
        history_step=history_step,
        history_hours=history_hours,
    )
    live = LiveSnapshot(client, flavors, live_options)
    allowed = allowed_hosts(host, allowed_host or [])
    app = create_dashboard_app(live, on_close=client.aclose, allowed_hosts=allowed)
    console.print(f"Dashboard on http://{host}:{port}/")
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=SHUTDOWN_SECONDS,
    )
    _DashboardServer(config, live).run()


class _DashboardServer(uvicorn.Server):
    """Ends the browsers' event streams when told to stop: they never end by themselves."""

    def __init__(self, config: uvicorn.Config, live: LiveSnapshot) -> None:
        super().__init__(config)
        self._live = live

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self._live.close_streams()
        super().handle_exit(sig, frame)


def register(app: typer.Typer) -> None:
    app.command()(dashboard)
