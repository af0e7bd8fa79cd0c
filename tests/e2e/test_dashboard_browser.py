"""The dashboard as a person sees it: headless Chromium on the page of a real
``placement-api dashboard`` in front of a real API server with real data.

The numbers on the page must be those of ``GET /capacity`` (and the hosts
down those of ``GET /heartbeats?alive=false``); a claim made through the API
must show on the page without a reload; hosts down and disabled are told
apart; at 1024 and 1400 pixels nothing overflows or is clipped; a token the
API refuses shows as a failure, never as "live"; screenshots are left in
``var/artifacts/`` for CI; searching narrows the host table. Chromium and
chromedriver are Debian's (``make chromium``); without them the test fails,
it is never skipped.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import httpx
import pytest
from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.support import databases
from tests.support.server import free_port, live_server, stop

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTIFACTS = Path(__file__).resolve().parents[2] / "var" / "artifacts"
HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
FLAVORS = {"small": "VCPU:1,MEMORY_MB:2048", "large": "VCPU:4,MEMORY_MB:8192"}
CLASSES = ("VCPU", "MEMORY_MB")
# (answer key, its identifier, the page's row scope)
BREAKDOWNS = (("availability_zones", "name", "az"), ("aggregates", "uuid", "aggregate"))
UPDATE_WITHIN = 60.0  # seconds the page has to show a claim (a loaded CI machine is slow)
WIDTHS = (1024, 1400)
NO_FIGURE = "\N{EN DASH}"  # shown for a figure there is none of (fits of a host not counted)

# Each element's text as shown: the fits table by scope and flavor, the host
# table by host uuid, then class or flavor.
READ_PAGE = """
const text = (node) => node.textContent.trim();
const fits = {}, hosts = {};
for (const row of document.querySelectorAll('#fits tbody tr')) {
  const cells = fits[row.dataset.scope] = {};
  for (const cell of row.querySelectorAll('td[data-flavor]')) {
    cells[cell.dataset.flavor] = text(cell);
  }
}
for (const row of document.querySelectorAll('#hosts tbody tr')) {
  const cells = hosts[row.dataset.uuid] = {state: row.dataset.state};
  for (const cell of row.querySelectorAll('td[data-rc]')) {
    cells[cell.dataset.rc] = `${cell.dataset.used}/${cell.dataset.capacity}`;
  }
  for (const cell of row.querySelectorAll('td[data-flavor]')) {
    cells[cell.dataset.flavor] = text(cell);
  }
  cells.consumers = text(row.querySelector('td[data-col="consumers"]'));
  cells.utilisation = text(row.querySelector('td[data-col="utilisation"]'));
}
const down = [...document.querySelectorAll('#down li[data-uuid]')].map((li) => li.dataset.uuid);
return {fits, hosts, down: down.sort(), noReload: window.__sameDocument === true};
"""
# What does not fit: the page wider than the window, or a table wider than its box
# (scrolled or cut), and the text of the badge, banner and loading note.
READ_LAYOUT = """
const doc = document.documentElement;
const clipped = [];
for (const id of ['fits', 'classes', 'hosts']) {
  const table = document.getElementById(id);
  if (table.offsetParent === null) continue;  // not shown
  let box = table.parentElement;
  if (box.scrollWidth > box.clientWidth + 1) clipped.push(id);
  const section = table.closest('section').getBoundingClientRect();
  for (const th of table.querySelectorAll('th')) {
    const edge = th.getBoundingClientRect();
    if (edge.right > section.right + 1) clipped.push(`${id}: ${th.textContent}`);
  }
}
const shown = (id) => document.getElementById(id).offsetParent !== null;
return {
  overflow: doc.scrollWidth - doc.clientWidth,
  clipped,
  badge: document.getElementById('connection').textContent,
  badgeClass: document.getElementById('connection').className,
  banner: shown('error') ? document.getElementById('error').textContent : null,
  loading: shown('loading') ? document.getElementById('loading').textContent : null,
  main: shown('main'),
  text: document.body.innerText,
};
"""


@pytest.fixture(autouse=True)
def _emptied_afterwards(database_url: str) -> Iterator[None]:
    yield
    databases.empty(database_url)


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    missing = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not path.exists()]
    if missing:
        pytest.fail(
            f"{' and '.join(missing)} missing: the dashboard's browser test needs Debian's "
            "chromium and chromium-driver (`make chromium` installs them)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(argument)
    options.add_argument(f"--window-size={WIDTHS[-1]},1500")
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _ok(response: httpx.Response) -> Any:
    assert response.is_success, f"{response.request.method} {response.request.url}: {response.text}"
    return response.json() if response.content else None


def _host(api: httpx.Client, name: str, vcpu: int, memory_mb: int, ratio: float) -> str:
    provider: str = _ok(api.post("/resource_providers", json={"name": name}))["uuid"]
    inventories = {
        "VCPU": {"total": vcpu, "allocation_ratio": ratio},
        "MEMORY_MB": {"total": memory_mb, "reserved": 512},
    }
    _ok(
        api.put(
            f"/resource_providers/{provider}/inventories",
            json={"resource_provider_generation": 0, "inventories": inventories},
        )
    )
    return provider


def _claim(api: httpx.Client, provider: str, vcpu: int, memory_mb: int) -> None:
    body = {
        "allocations": {provider: {"resources": {"VCPU": vcpu, "MEMORY_MB": memory_mb}}},
        "consumer_generation": None,
        "consumer_type": "INSTANCE",
        "project_id": "demo",
        "user_id": "demo",
    }
    _ok(api.put(f"/allocations/{uuid.uuid4()}", json=body))


def _aggregate(api: httpx.Client, provider: str, aggregate: str) -> None:
    generation = _ok(api.get(f"/resource_providers/{provider}"))["generation"]
    body = {"aggregates": [aggregate], "resource_provider_generation": generation}
    _ok(api.put(f"/resource_providers/{provider}/aggregates", json=body))


def _cloud(api: httpx.Client) -> dict[str, str]:
    """Four hosts in two aggregates, some of their capacity used, one over capacity,
    one whose agent stopped, one disabled."""
    hosts = {
        "compute-1": _host(api, "compute-1", 16, 32768, 4.0),
        "compute-2": _host(api, "compute-2", 8, 16384, 1.0),
        "compute-3": _host(api, "compute-3", 4, 8192, 1.0),
        "compute-4": _host(api, "compute-4", 8, 16384, 1.0),
    }
    _ok(
        api.put(
            f"/resource_providers/{hosts['compute-4']}/traits",
            json={"traits": ["COMPUTE_STATUS_DISABLED"], "resource_provider_generation": 1},
        )
    )
    rack_a, rack_b = str(uuid.uuid4()), str(uuid.uuid4())
    for name, rack in (("compute-1", rack_a), ("compute-2", rack_a), ("compute-3", rack_b)):
        _aggregate(api, hosts[name], rack)
    _claim(api, hosts["compute-1"], 18, 8192)  # beyond its 16 physical CPUs: overcommit
    _claim(api, hosts["compute-2"], 8, 4096)
    _claim(api, hosts["compute-3"], 4, 4096)
    # Fewer CPUs than are allocated: accepted, and the host is over capacity.
    inventory = _ok(api.get(f"/resource_providers/{hosts['compute-3']}/inventories"))
    vcpu = {**inventory["inventories"]["VCPU"], "total": 2}
    _ok(
        api.put(
            f"/resource_providers/{hosts['compute-3']}/inventories/VCPU",
            json={
                "resource_provider_generation": inventory["resource_provider_generation"],
                **vcpu,
            },
        )
    )
    # compute-1's agent reports hourly; compute-3's stopped after one beat (down
    # after 3 missed seconds); compute-2 never sent one (unknown: not listed).
    for name, interval in (("compute-1", 3600), ("compute-3", 1)):
        beat = {"interval": interval, "metrics": {"cpu.percent": 37.5, "memory.percent": 31.6}}
        _ok(api.put(f"/resource_providers/{hosts[name]}/heartbeat", json=beat))
    return hosts


def _until_down(api: httpx.Client, provider: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        down = _ok(api.get("/heartbeats", params={"alive": "false"}))["heartbeats"]
        if any(beat["resource_provider_uuid"] == provider for beat in down):
            return
        time.sleep(0.5)
    pytest.fail(f"the API never reported {provider} down")


def _expected(api: httpx.Client) -> dict[str, Any]:
    """What the page must show, read from GET /capacity as any client reads it:
    fits and groups of the hosts counted, every host with its state."""
    by = {"by": "host,aggregate,az"}
    usage = _ok(api.get("/capacity", params={"by": "aggregate,az"}))
    every = _ok(api.get("/capacity", params={"by": "host", "include_unavailable": "true"}))
    fits = {f: _ok(api.get("/capacity", params={"resources": r, **by})) for f, r in FLAVORS.items()}
    shown: dict[str, Any] = {"fits": {"total": {f: str(a["fits"]) for f, a in fits.items()}}}
    if usage["unavailable"]["hosts"]:
        shown["fits"]["unavailable"] = {f: str(a["unavailable"]["fits"]) for f, a in fits.items()}
    for breakdown, key, scope in BREAKDOWNS:
        for group in usage[breakdown]:
            shown["fits"][f"{scope}:{group[key]}"] = {
                flavor: str(_fits_of(answer[breakdown], key, group[key]))
                for flavor, answer in fits.items()
            }
    shown["hosts"] = {}
    for host in every["hosts"]:
        figures = host["resources"]
        state = ",".join(s for s in ("disabled", "down") if host[s]) or "enabled"
        cells = {rc: f"{figures[rc]['used']}/{figures[rc]['capacity']}" for rc in CLASSES}
        cells |= {"state": state, "consumers": str(host["consumers"])}
        # What the agent measured (the heartbeats of _cloud), as the page words it.
        beaten = host["name"] in ("compute-1", "compute-3")
        cells["utilisation"] = "CPU 37.5% · mem 31.6%" if beaten else NO_FIGURE
        for flavor, answer in fits.items():
            counted = {h["uuid"]: h["fits"] for h in answer["hosts"]}
            cells[flavor] = str(counted[host["uuid"]]) if host["uuid"] in counted else NO_FIGURE
        shown["hosts"][host["uuid"]] = cells
    down = _ok(api.get("/heartbeats", params={"alive": "false"}))["heartbeats"]
    shown["down"] = sorted(beat["resource_provider_uuid"] for beat in down)
    return shown


def _fits_of(groups: list[dict[str, Any]], key: str, value: str) -> int:
    return int(next(group["fits"] for group in groups if group[key] == value))


@contextmanager
def _dashboard(api_url: str, token: str = "admin", *, refused: bool = False) -> Iterator[str]:
    """A dashboard process; ``refused``: its token is one the API refuses."""
    port = free_port()
    flavors = [argument for name, r in FLAVORS.items() for argument in ("--flavor", f"{name}={r}")]
    # A file, not a pipe: nobody reads it until the end.
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "placement_api", "dashboard", "--port", str(port),
             "--api-url", api_url, "--token", token, "--debounce", "0.2",
             "--liveness-interval", "1", "--history-step", "1", *flavors],
            stdout=subprocess.DEVNULL, stderr=log,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_for_first_read(url, process, log, refused=refused)
            yield url
        finally:
            stop(process)


def _wait_for_first_read(
    url: str, process: subprocess.Popen[bytes], log: IO[bytes], *, refused: bool
) -> None:
    """Until the first read succeeded (``refused``: failed) or 60 s passed."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log.seek(0)
            stderr = log.read().decode(errors="replace")
            raise RuntimeError(f"dashboard exited with {process.returncode}: {stderr[-2000:]}")
        try:
            summary = httpx.get(f"{url}/api/summary", timeout=2).json()
            if summary.get("error" if refused else "read_at"):
                return
            assert refused or summary.get("error") is None, summary["error"]
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the dashboard at {url} read no capacity within 60s")


def _page_shows(browser: webdriver.Chrome, expected: dict[str, Any]) -> dict[str, Any]:
    """Wait (bounded) until the page shows ``expected``; the test fails if it never does."""
    seen: dict[str, Any] = {}

    def shows(driver: webdriver.Chrome) -> bool:
        seen.update(driver.execute_script(READ_PAGE))
        return all(seen[key] == value for key, value in expected.items())

    try:
        WebDriverWait(browser, UPDATE_WITHIN, poll_frequency=0.25).until(shows)
    except TimeoutException:
        pytest.fail(f"within {UPDATE_WITHIN}s the page showed {seen}, not {expected}")
    return seen


def test_the_page_shows_the_capacity_report_and_follows_a_claim_without_reload(
    database_url: str, backend: str, browser: webdriver.Chrome
) -> None:
    with (
        live_server(database_url, PLACEMENT_CHANGES_POLL_INTERVAL="1") as server,
        httpx.Client(base_url=server.url, headers=HEADERS, timeout=30) as api,
    ):
        hosts = _cloud(api)
        with _dashboard(server.url) as dashboard_url:
            browser.set_window_size(WIDTHS[-1], 1500)
            browser.get(dashboard_url)
            browser.execute_script("window.__sameDocument = true;")
            _until_down(api, hosts["compute-3"])
            before = _expected(api)
            assert before["down"] == [hosts["compute-3"]]
            # Down and disabled are told apart, and neither is counted.
            assert before["hosts"][hosts["compute-3"]]["state"] == "down"
            assert before["hosts"][hosts["compute-4"]]["state"] == "disabled"
            assert before["hosts"][hosts["compute-4"]]["small"] == NO_FIGURE
            _page_shows(browser, before)
            assert "compute-3" in browser.find_element("id", "over").text

            _claim(api, hosts["compute-1"], 4, 8192)
            after = _expected(api)
            assert after != before
            shown = _page_shows(browser, after)
            assert shown["noReload"], "the page was reloaded instead of updated"
            assert shown["hosts"][hosts["compute-1"]]["consumers"] == "2"

            for width in WIDTHS:
                layout = _fits_the_window(browser, width, f"dashboard-{backend}-{width}.png")
                assert layout["badge"] == "live", layout
                assert layout["banner"] is None
            text = layout["text"]
            assert "GiB" in text, "memory is shown in human units"
            assert re.search(r"\d\d:\d\d:\d\d UTC", text), "times are shown to the second"
            assert not re.search(r"\d\d:\d\d:\d\d\.\d", text), "no sub-second times"
            assert browser.find_elements(By.CSS_SELECTOR, "#history .chart polyline")

            browser.find_element("id", "search").send_keys("compute-2")
            _page_lists_only(browser, [hosts["compute-2"]])


def test_a_token_the_api_refuses_shows_as_a_failure_not_as_live(
    database_url: str, backend: str, browser: webdriver.Chrome
) -> None:
    """A reader of no role: GET /capacity, /heartbeats and /changes answer 403."""
    with (
        live_server(database_url) as server,
        _dashboard(server.url, "someone:project", refused=True) as dashboard_url,
    ):
        browser.set_window_size(WIDTHS[0], 1000)
        browser.get(dashboard_url)
        seen: dict[str, Any] = {}

        def failing(driver: webdriver.Chrome) -> bool:
            seen.update(driver.execute_script(READ_LAYOUT))
            return "failing" in seen["badgeClass"] and bool(seen["banner"])

        try:
            WebDriverWait(browser, UPDATE_WITHIN, poll_frequency=0.25).until(failing)
        except TimeoutException:
            pytest.fail(f"the page never showed the failure: {seen}")
        assert "live" not in seen["badge"]
        assert "403" in seen["banner"]
        assert seen["loading"], "the page says there is no data yet, rather than nothing"
        assert not seen["main"]
        for width in WIDTHS:
            _fits_the_window(browser, width, f"dashboard-refused-{backend}-{width}.png")


def test_credentials_refused_the_host_detail_still_show_the_totals(
    database_url: str, backend: str, browser: webdriver.Chrome, tmp_path: Path
) -> None:
    """placement:capacity:hosts:read refused: the fits and classes are shown, the
    badge and a note say the host detail is missing and why."""
    policy = tmp_path / "policy.yaml"
    policy.write_text('"placement:capacity:hosts:read": "!"\n')
    with (
        live_server(database_url, PLACEMENT_POLICY_FILE=str(policy)) as server,
        httpx.Client(base_url=server.url, headers=HEADERS, timeout=30) as api,
    ):
        _host(api, "compute-1", 16, 32768, 4.0)
        with _dashboard(server.url) as dashboard_url:
            browser.set_window_size(WIDTHS[0], 1200)
            browser.get(dashboard_url)
            seen: dict[str, Any] = {}

            def degraded(driver: webdriver.Chrome) -> bool:
                seen.update(driver.execute_script(READ_LAYOUT))
                seen["fits"] = driver.execute_script(READ_PAGE)["fits"]
                return seen["badge"] == "degraded: no host detail" and bool(seen["fits"])

            try:
                WebDriverWait(browser, UPDATE_WITHIN, poll_frequency=0.25).until(degraded)
            except TimeoutException:
                pytest.fail(f"the page never showed the missing host detail: {seen}")
            assert seen["fits"]["total"] == {"small": "15", "large": "3"}
            note = browser.find_element("id", "host-detail-note").text
            assert "placement:capacity:hosts:read" in note
            assert "403" in note


def _fits_the_window(browser: webdriver.Chrome, width: int, screenshot: str) -> dict[str, Any]:
    """At ``width`` pixels: no horizontal overflow, no table clipped; a screenshot kept."""
    browser.set_window_size(width, 1500)
    WebDriverWait(browser, 10).until(
        lambda driver: driver.execute_script("return window.innerWidth") <= width
    )
    layout: dict[str, Any] = browser.execute_script(READ_LAYOUT)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / screenshot))
    assert layout["overflow"] <= 0, f"{layout['overflow']}px of horizontal overflow at {width}px"
    assert layout["clipped"] == [], f"clipped at {width}px: {layout['clipped']}"
    return layout


def _page_lists_only(browser: webdriver.Chrome, uuids: list[str]) -> None:
    """Wait (bounded) until the host table lists exactly these hosts."""
    listed: list[str] = []

    def lists(driver: webdriver.Chrome) -> bool:
        listed[:] = driver.execute_script(READ_PAGE)["hosts"]
        return listed == uuids

    try:
        WebDriverWait(browser, UPDATE_WITHIN, poll_frequency=0.25).until(lists)
    except TimeoutException:
        pytest.fail(f"the search listed {listed}, not {uuids}")
