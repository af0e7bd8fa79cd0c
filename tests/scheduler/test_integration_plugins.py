"""Plugins from outside the tree: a separate package, installed on a temporary path
(its code and a ``.dist-info`` with the entry points its pyproject declares, as
pip installs a wheel), found by ``importlib.metadata``, enabled by name."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from scheduler.deciding.pipeline import Pipeline
from scheduler.plugins.external import PluginLoadError
from scheduler.request.spec import ScheduleRequest
from scheduler.settings import SchedulerSettings
from tests.scheduler.conftest import MakeScheduler
from tests.scheduler.live import Cloud

PACKAGE = Path(__file__).parent / "plugin_package"
MODULE = "placement_scheduler_example"


def install(site: Path) -> None:
    """Install the package into ``site`` the way pip lays out a wheel."""
    project = tomllib.loads((PACKAGE / "pyproject.toml").read_text())["project"]
    shutil.copytree(PACKAGE / MODULE, site / MODULE)
    dist_info = site / f"{MODULE}-{project['version']}.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    lines = []
    for group, points in project["entry-points"].items():
        lines.append(f"[{group}]")
        lines.extend(f"{name} = {target}" for name, target in points.items())
    (dist_info / "entry_points.txt").write_text("\n".join(lines) + "\n")


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site-packages"
    site.mkdir()
    install(site)
    monkeypatch.syspath_prepend(str(site))
    return site


@pytest.mark.parametrize("live_placement", ["sqlite"], indirect=True)  # the plugin, not the DB
async def test_an_installed_plugin_is_enabled_by_name_and_takes_part(
    installed: Path, cloud: Cloud, make_scheduler: MakeScheduler
) -> None:
    await cloud.host("h-1")
    await cloud.host("h-2")
    longest = await cloud.host("host-4")
    scheduler = make_scheduler(
        enabled_filters=["compute_enabled", "only_even_names"],
        enabled_weighers=["name_length"],
    )
    result = await scheduler.schedule(ScheduleRequest.model_validate({"resources": {"VCPU": 1}}))
    assert result.selections[0].provider.uuid == longest
    report = result.explanation.instances[0]
    (plugin_filter,) = [f for f in report.filters if f.name == "only_even_names"]
    assert [r.reason for r in plugin_filter.rejected] == [
        "only_even_names: h-1 does not end in an even digit"
    ]
    assert {t.weigher for t in report.chosen.terms} == {"name_length"}  # type: ignore[union-attr]


def test_a_plugin_that_fails_to_load_stops_start_up_naming_it(installed: Path) -> None:
    settings = SchedulerSettings(enabled_filters=["compute_enabled", "broken"])
    with pytest.raises(PluginLoadError, match=r"'broken'.*ModuleNotFoundError"):
        Pipeline.from_settings(settings)


def test_serve_refuses_to_start_with_a_broken_plugin(installed: Path) -> None:
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(installed), *sys.path]),
        PLACEMENT_SCHEDULER_ENABLED_FILTERS="broken",
    )
    done = subprocess.run(
        [sys.executable, "-m", "scheduler", "serve", "--api-url", "http://127.0.0.1:9"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2
    assert "'broken'" in done.stderr
    assert "placement_scheduler_example_missing_dependency" in done.stderr


def test_without_the_package_the_name_is_unknown() -> None:
    with pytest.raises(ValueError, match="unknown filter only_even_names"):
        Pipeline.from_settings(SchedulerSettings(enabled_filters=["only_even_names"]))
