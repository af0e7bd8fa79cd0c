"""``make demo``: a small cloud on one machine, filled by the scheduler.

Starts the Placement API on a fresh SQLite file, reports hosts of three sizes
with the real compute agent (``placement-agent --once``) on libvirt's test
driver, starts the scheduler service, places a few hundred instances of mixed
flavors (with an anti-affinity group) through the scheduler's HTTP API, and
prints per-host usage before and after, then the explanation of a request that
cannot be placed. The dashboard (``placement-api dashboard``) follows it all
live; the demo ends by printing its URL and, in a terminal, keeps serving it
until Ctrl-C. Everything runs in a temporary directory and is stopped at the
end.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
from rich.console import Console
from rich.table import Table

from scheduler.request.spec import ScheduleRequest
from scheduler.serving.render import render_explanation
from scheduler.serving.service_client import NoValidHostError, SchedulerClient

console = Console()
PLACEMENT_HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
DISK_ALLOCATION_RATIO = "2.0"  # thin-provisioned disks


@dataclass(frozen=True)
class HostSize:
    label: str
    count: int
    cpus: int
    memory_gib: int
    disk_gb: int


SIZES = (
    HostSize("large", 2, 64, 256, 200),
    HostSize("medium", 3, 32, 128, 150),
    HostSize("small", 3, 16, 64, 80),
)
FLAVORS = {  # name: (vcpus, memory_mb, root_gb, share of the instances)
    "tiny": (1, 512, 1, 0.4),
    "small": (1, 2048, 5, 0.3),
    "medium": (2, 4096, 10, 0.2),
    "large": (4, 8192, 20, 0.1),
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_for(url: str, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with code {process.returncode}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError(f"{what} did not answer at {url}")


@contextmanager
def _process(argv: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as output:
        process = subprocess.Popen(argv, env=env, stdout=output, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _node_xml(size: HostSize) -> str:
    return (
        "<node><cpu><mhz>2400</mhz><model>x86_64</model>"
        f"<active>{size.cpus}</active><nodes>1</nodes><sockets>1</sockets>"
        f"<cores>{size.cpus}</cores><threads>1</threads></cpu>"
        f"<memory>{size.memory_gib * 1024 * 1024}</memory></node>\n"
    )


async def _report_host(work: Path, api_url: str, name: str, size: HostSize) -> None:
    """One pass of the real agent, on a libvirt test-driver host of this size."""
    node = work / f"{name}.xml"
    node.write_text(_node_xml(size))
    statvfs = os.statvfs(work)
    disk_total_gb = statvfs.f_blocks * statvfs.f_frsize // 1024**3
    env = dict(
        os.environ,
        PLACEMENT_AGENT_RESERVED_HOST_DISK_MB=str(max(0, disk_total_gb - size.disk_gb) * 1024),
        PLACEMENT_AGENT_DISK_ALLOCATION_RATIO=DISK_ALLOCATION_RATIO,
    )
    agent = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent", "--once", "--api-url", api_url, "--token", "admin",
        "--libvirt-uri", f"test://{node}", "--provider-name", name,
        "--state-dir", str(work / f"state-{name}"), "--instances-path", str(work),
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await agent.communicate()
    if agent.returncode != 0:
        raise RuntimeError(f"agent for {name} failed:\n{output.decode()[-2000:]}")


async def _usage_table(api_url: str, title: str) -> Table:
    table = Table(title=title)
    for column in ("host", "instances", "VCPU used/capacity", "MEMORY_MB", "DISK_GB"):
        table.add_column(column, justify="right" if column != "host" else "left")
    async with httpx.AsyncClient(base_url=api_url, headers=PLACEMENT_HEADERS) as http:
        providers = (await http.get("/resource_providers")).json()["resource_providers"]
        for rp in sorted(providers, key=lambda p: p["name"]):
            path = f"/resource_providers/{rp['uuid']}"
            inventories = (await http.get(f"{path}/inventories")).json()["inventories"]
            usages = (await http.get(f"{path}/usages")).json()["usages"]
            consumers = (await http.get(f"{path}/allocations")).json()["allocations"]
            cells = []
            for rc in ("VCPU", "MEMORY_MB", "DISK_GB"):
                inv = inventories[rc]
                capacity = int((inv["total"] - inv["reserved"]) * inv["allocation_ratio"])
                cells.append(f"{usages.get(rc, 0)}/{capacity}")
            table.add_row(rp["name"], str(len(consumers)), *cells)
    return table


def _requests(instances: int, group_size: int, rng: random.Random) -> list[ScheduleRequest]:
    """A mix of flavors; ``group_size`` of them, spread through the list, join group 'web'."""
    names = list(FLAVORS)
    shares = [FLAVORS[n][3] for n in names]
    group = {"uuid": str(uuid.uuid4()), "policy": "anti-affinity", "name": "web"}
    members = set(range(0, instances, max(1, instances // group_size))[:group_size])
    requests = []
    for index in range(instances):
        flavor = "medium" if index in members else rng.choices(names, shares)[0]
        vcpus, memory_mb, root_gb, _ = FLAVORS[flavor]
        body: dict[str, Any] = {
            "flavor": {"vcpus": vcpus, "memory_mb": memory_mb, "root_gb": root_gb},
            "project_id": "demo",
            "user_id": "demo",
        }
        if index in members:
            body["hints"] = {"group": group}
        requests.append(ScheduleRequest.model_validate(body))
    return requests


async def _place_all(url: str, requests: list[ScheduleRequest], parallel: int) -> dict[str, int]:
    outcome = {"placed": 0, "no valid host": 0, "claim retries": 0}
    queue: asyncio.Queue[ScheduleRequest] = asyncio.Queue()
    for request in requests:
        queue.put_nowait(request)

    async def worker(client: SchedulerClient) -> None:
        while not queue.empty():
            request = queue.get_nowait()
            try:
                result = await client.schedule(request)
            except NoValidHostError:
                outcome["no valid host"] += 1
                continue
            outcome["placed"] += len(result.selections)
            claims = sum(len(i.claims) - 1 for i in result.explanation.instances)
            outcome["claim retries"] += claims

    async with SchedulerClient(url) as client:
        await asyncio.gather(*(worker(client) for _ in range(parallel)))
    return outcome


async def _demo(work: Path, api_url: str, scheduler_url: str, instances: int, seed: int) -> None:
    hosts = [(f"{size.label}-{i}", size) for size in SIZES for i in range(1, size.count + 1)]
    console.rule("Reporting hosts with placement-agent on libvirt's test driver")
    await asyncio.gather(*(_report_host(work, api_url, name, size) for name, size in hosts))
    console.print(await _usage_table(api_url, "Per-host usage before"))

    group_size = len(hosts)
    console.rule(f"Placing {instances} instances ({group_size} in anti-affinity group 'web')")
    requests = _requests(instances, group_size, random.Random(seed))
    group_hint = next(r.hints.group for r in requests if r.hints.group is not None)
    started = time.perf_counter()
    outcome = await _place_all(scheduler_url, requests, parallel=4)
    elapsed = time.perf_counter() - started
    console.print(
        f"{outcome['placed']} placed, {outcome['no valid host']} without a valid host, "
        f"{outcome['claim retries']} claim retries after races, in {elapsed:.1f}s "
        f"({outcome['placed'] / elapsed:.0f} instances/s)"
    )
    console.print(await _usage_table(api_url, "Per-host usage after"))

    console.rule("A request that cannot be placed: one more member of group 'web'")
    extra = ScheduleRequest.model_validate(
        {"flavor": {"vcpus": 2, "memory_mb": 4096, "root_gb": 10}, "hints": {"group": group_hint}}
    )
    async with SchedulerClient(scheduler_url) as client:
        try:
            await client.schedule(extra)
            console.print("[yellow]it was placed after all (the group has room)[/yellow]")
        except NoValidHostError as exc:
            render_explanation(console, exc.explanation)


def _dashboard_argv(api_url: str, port: int) -> list[str]:
    """``placement-api dashboard`` showing how many of each demo flavor still fit."""
    flavors = [
        f"--flavor={name}=VCPU:{vcpus},MEMORY_MB:{memory_mb},DISK_GB:{root_gb}"
        for name, (vcpus, memory_mb, root_gb, _) in FLAVORS.items()
    ]
    return [sys.executable, "-m", "placement_api", "dashboard", "--port", str(port),
            "--api-url", api_url, "--token", "admin", *flavors]  # fmt: skip


def _serve_until_interrupted(dashboard_url: str, serve: bool) -> None:
    console.rule("Dashboard")
    console.print(f"Dashboard: {dashboard_url}")
    if not serve:
        return
    console.print("The API and the dashboard keep running: press Ctrl-C to stop them.")
    # Waited for, not handled: Ctrl-C or a SIGTERM both end the wait, and the caller
    # then stops everything it started.
    stop_signals = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
    signal.sigwait(stop_signals)


def main(
    instances: Annotated[int, typer.Option(help="How many instances to place.")] = 300,
    seed: Annotated[int, typer.Option(help="Random seed for the flavor mix.")] = 7,
    serve: Annotated[
        bool | None,
        typer.Option(help="Keep the API and dashboard up at the end (default: in a terminal)."),
    ] = None,
) -> None:
    """Run the demo; everything it starts is stopped at the end."""
    with tempfile.TemporaryDirectory(prefix="placement-demo-") as directory, ExitStack() as stack:
        work = Path(directory)
        api_port, scheduler_port, dashboard_port = _free_port(), _free_port(), _free_port()
        api_url = f"http://127.0.0.1:{api_port}"
        scheduler_url = f"http://127.0.0.1:{scheduler_port}"
        dashboard_url = f"http://127.0.0.1:{dashboard_port}/"
        env = dict(os.environ, PLACEMENT_DATABASE_URL=f"sqlite+aiosqlite:///{work}/demo.sqlite")
        console.rule(f"Placement API on {api_url} (SQLite in {work})")
        api = stack.enter_context(
            _process(
                [sys.executable, "-m", "placement_api", "serve", "--port", str(api_port),
                 "--log-level", "warning"],
                env, work / "placement-api.log",
            )
        )  # fmt: skip
        _wait_for(f"{api_url}/", api, "placement-api")
        scheduler_env = dict(os.environ, PLACEMENT_SCHEDULER_HOST_SUBSET_SIZE="2")
        scheduler = stack.enter_context(
            _process(
                [sys.executable, "-m", "scheduler", "serve", "--api-url", api_url,
                 "--port", str(scheduler_port), "--log-level", "warning"],
                scheduler_env, work / "scheduler.log",
            )
        )  # fmt: skip
        _wait_for(f"{scheduler_url}/v1/filters", scheduler, "placement-scheduler")
        console.print(f"Scheduler on {scheduler_url}")
        dashboard = stack.enter_context(
            _process(_dashboard_argv(api_url, dashboard_port), env, work / "dashboard.log")
        )
        _wait_for(f"{dashboard_url}api/summary", dashboard, "placement-api dashboard")
        console.print(f"Dashboard on {dashboard_url} (it follows the demo live)")
        asyncio.run(_demo(work, api_url, scheduler_url, instances, seed))
        _serve_until_interrupted(dashboard_url, sys.stdin.isatty() if serve is None else serve)


if __name__ == "__main__":
    typer.run(main)
