"""Which source of credentials the agent and the scheduler use: a config file
section over a static token over ``OS_*`` variables over nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from keystoneauth1 import adapter, token_endpoint
from keystoneauth1.identity import generic

from agent.settings import AgentSettings
from placement_client import AuthOptions, load_adapter
from placement_client.auth import DEFAULT_API_URL
from scheduler.settings import SchedulerSettings
from tests.support.server import free_port

OS_PASSWORD = {
    "OS_AUTH_URL": "http://keystone.test/v3",
    "OS_USERNAME": "placement-agent",
    "OS_PASSWORD": "secret",
    "OS_USER_DOMAIN_NAME": "Default",
    "OS_INTERFACE": "internal",
    "OS_REGION_NAME": "RegionTwo",
}


def plugin_of(found: adapter.Adapter) -> object:
    return found.auth or found.session.auth


def section(tmp_path: Path) -> Path:
    path = tmp_path / "placement.conf"
    path.write_text(
        "[placement]\nauth_type = password\nauth_url = http://file.test/v3\n"
        "username = from-file\npassword = p\nuser_domain_name = Default\n"
    )
    return path


def test_a_config_file_section_wins_over_a_token_and_os_variables(tmp_path: Path) -> None:
    options = AuthOptions(token="admin", config_file=section(tmp_path))
    plugin = plugin_of(load_adapter(options, OS_PASSWORD))
    assert isinstance(plugin, generic.Password)
    assert plugin.auth_url == "http://file.test/v3"


def test_a_static_token_wins_over_os_variables_and_is_sent_as_it_is() -> None:
    found = load_adapter(AuthOptions(api_url="http://api.test", token="admin"), OS_PASSWORD)
    plugin = plugin_of(found)
    assert isinstance(plugin, token_endpoint.Token)
    assert found.session.get_auth_headers() == {"X-Auth-Token": "admin"}
    assert found.get_endpoint() == "http://api.test"


def test_os_variables_give_password_credentials_interface_and_region() -> None:
    found = load_adapter(AuthOptions(), OS_PASSWORD)
    plugin = plugin_of(found)
    assert isinstance(plugin, generic.Password)
    chosen = plugin.get_cache_id_elements()
    assert (chosen["auth_url"], chosen["username"], chosen["user_domain_name"]) == (
        "http://keystone.test/v3",
        "placement-agent",
        "Default",
    )
    assert (found.interface, found.region_name, found.service_type) == (
        "internal",
        "RegionTwo",
        "placement",
    )


def test_with_nothing_configured_no_token_is_sent_to_the_local_api() -> None:
    found = load_adapter(AuthOptions(), {})
    assert found.session.get_auth_headers() is None
    assert found.get_endpoint() == DEFAULT_API_URL


def test_the_agent_reads_its_auth_options_from_its_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = section(tmp_path)
    monkeypatch.setenv("PLACEMENT_AGENT_AUTH_CONFIG_FILE", str(config))
    monkeypatch.setenv("PLACEMENT_AGENT_AUTH_SECTION", "placement")
    assert AgentSettings().auth_options() == AuthOptions(None, None, config, "placement")


def test_the_scheduler_sends_the_noauth2_admin_token_only_without_keystone_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("OS_AUTH_URL", "OS_AUTH_TYPE", "OS_AUTH_PLUGIN"):
        monkeypatch.delenv(name, raising=False)
    assert SchedulerSettings().auth_options().token == "admin"
    monkeypatch.setenv("OS_AUTH_URL", "http://keystone.test/v3")
    assert SchedulerSettings().auth_options().token is None
    assert SchedulerSettings(token="t").auth_options().token == "t"


def test_placement_scheduler_serve_refuses_a_section_without_credentials(tmp_path: Path) -> None:
    config = tmp_path / "scheduler.conf"
    config.write_text("[placement]\nregion_name = RegionOne\n")
    scheduler = Path(sys.executable).parent / "placement-scheduler"
    completed = subprocess.run(
        [str(scheduler), "serve", "--auth-config", str(config), "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    message = " ".join(completed.stderr.split())
    assert completed.returncode == 1
    assert f"cannot set up Placement credentials: [placement] of {config}" in message
