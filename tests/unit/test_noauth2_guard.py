"""Secure by default: noauth2 is refused off loopback and always announced."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from placement_api.app import NOAUTH2_WARNING, create_app
from placement_api.cli import main as cli
from placement_api.settings import Settings, get_settings


@pytest.fixture(autouse=True)
def fresh_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in (
        "PLACEMENT_AUTH_STRATEGY",
        "PLACEMENT_ALLOW_INSECURE_NOAUTH",
        "PLACEMENT_CONFIG_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "placement.example"])
def test_serve_refuses_noauth2_off_loopback(
    host: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Were it not refused, it would fail to bind (the port is taken), not serve.
    monkeypatch.setenv("PLACEMENT_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path}/p.sqlite")
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        result = CliRunner().invoke(cli.app, ["serve", "--host", host, "--port", port])
    assert result.exit_code == 2
    assert "PLACEMENT_ALLOW_INSECURE_NOAUTH" in result.output


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_loopback_addresses_are_recognised(host: str) -> None:
    cli._refuse_open_noauth2(host)


def test_the_operator_may_accept_the_risk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLACEMENT_ALLOW_INSECURE_NOAUTH", "true")
    cli._refuse_open_noauth2("0.0.0.0")


def test_keystone_may_listen_anywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLACEMENT_AUTH_STRATEGY", "keystone")
    cli._refuse_open_noauth2("0.0.0.0")


async def test_noauth2_start_up_logs_a_warning(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(settings)
    with caplog.at_level(logging.WARNING, logger="placement_api.app"):
        async with app.router.lifespan_context(app):
            pass
    assert NOAUTH2_WARNING in caplog.messages


def test_keystone_without_a_config_file_stops_start_up() -> None:
    with pytest.raises(ValueError, match="PLACEMENT_CONFIG_FILE"):
        create_app(Settings(auth_strategy="keystone"))
