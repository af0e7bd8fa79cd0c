"""End to end: the agent against a real libvirtd with QEMU and a real API server.

The agent reports the host; a tiny diskless domain is started; drift is
reported until an allocation exists for it. ``scripts/install-libvirtd.sh``
prepares libvirtd (CI runs it first); if libvirtd is installed but not
running, this module starts it with that script and stops it afterwards.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from agent.reporting_pass import Outcome
from agent.state import StateStore
from tests.agent.conftest import ADMIN_HEADERS, PlacementServer

libvirt = pytest.importorskip("libvirt", reason="libvirt-python is not installed")

pytestmark = pytest.mark.libvirtd

URI = "qemu:///system"
REPO = Path(__file__).resolve().parents[2]
INSTALL_SCRIPT = REPO / "scripts" / "install-libvirtd.sh"
DAEMON_PID_FILES = (Path("/run/libvirtd.pid"), Path("/run/virtlogd.pid"))
AGENT = Path(sys.executable).parent / "placement-agent"


def _answers() -> bool:
    try:
        libvirt.openReadOnly(URI).close()
    except libvirt.libvirtError:
        return False
    return True


def _why_libvirtd_cannot_run() -> str | None:
    if not sys.platform.startswith("linux"):
        return f"libvirtd with QEMU needs Linux, this is {sys.platform}"
    if shutil.which("libvirtd") is None:
        return "libvirtd is not installed here (scripts/install-libvirtd.sh installs it)"
    if os.geteuid() != 0:
        return "libvirtd is not running and starting it needs root"
    return None


@pytest.fixture(scope="module")
def libvirtd() -> Iterator[str]:
    if _answers():
        yield URI
        return
    reason = _why_libvirtd_cannot_run()
    if reason is not None:
        pytest.skip(reason)
    running_before = _daemon_pids()
    started = subprocess.run(
        [str(INSTALL_SCRIPT)],
        env=os.environ | {"LIBVIRTD_SKIP_INSTALL": "1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if started.returncode != 0 or not _answers():
        pytest.skip(f"libvirtd cannot run on this machine: {started.stderr.strip()}")
    try:
        yield URI
    finally:
        for pid in _daemon_pids() - running_before:
            os.kill(pid, signal.SIGTERM)


def _daemon_pids() -> set[int]:
    """Daemons running now, by their pid files: only the ones this module started are stopped."""
    pids = set()
    for pid_file in DAEMON_PID_FILES:
        try:
            pid = int(pid_file.read_text().strip())
            os.kill(pid, 0)
        except (OSError, ValueError):
            continue
        pids.add(pid)
    return pids


@pytest.fixture(scope="module")
def api_server() -> Iterator[PlacementServer]:
    with tempfile.TemporaryDirectory(prefix="agent-e2e-") as directory:
        url = f"sqlite+aiosqlite:///{Path(directory) / 'placement.sqlite'}"
        server = PlacementServer("sqlite", url, Path(directory) / "server.log")
        server.start()
        try:
            yield server
        finally:
            server.stop()


@contextmanager
def tiny_domain(uri: str) -> Iterator[str]:
    """A transient 1 vCPU, 64 MiB domain with no disk; TCG runs it without KVM."""
    domain_uuid = str(uuid.uuid4())
    xml = f"""<domain type='qemu'>
  <name>agent-e2e-{domain_uuid[:8]}</name><uuid>{domain_uuid}</uuid>
  <memory unit='MiB'>64</memory><vcpu>1</vcpu>
  <os><type arch='x86_64'>hvm</type></os>
  <devices><memballoon model='none'/></devices>
</domain>"""
    connection = libvirt.open(uri)
    try:
        domain = connection.createXML(xml, 0)
        try:
            yield domain_uuid
        finally:
            domain.destroy()
    finally:
        connection.close()


def run_once(server: PlacementServer, work: Path, name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(AGENT), "--once", "--api-url", server.url, "--token", "admin",
         "--libvirt-uri", URI, "--state-dir", str(work / "state"),
         "--instances-path", str(work), "--provider-name", name],
        env={k: v for k, v in os.environ.items() if not k.startswith("PLACEMENT_AGENT_")},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def meminfo_total_mib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    raise AssertionError("no MemTotal in /proc/meminfo")


def other_domains(domain_uuid: str) -> list[str]:
    connection = libvirt.openReadOnly(URI)
    try:
        return [
            d.UUIDString() for d in connection.listAllDomains() if d.UUIDString() != domain_uuid
        ]
    finally:
        connection.close()


@pytest.fixture
def api(api_server: PlacementServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=api_server.url, headers=ADMIN_HEADERS, timeout=10) as client:
        yield client


def test_agent_reports_a_real_host_and_drift_until_the_domain_has_an_allocation(
    libvirtd: str, api_server: PlacementServer, api: httpx.Client, tmp_path: Path
):
    name = f"e2e-{uuid.uuid4().hex[:8]}"

    reported = run_once(api_server, tmp_path, name)

    assert reported.returncode in (Outcome.SYNCED, Outcome.DRIFT), reported.stderr
    state = StateStore(tmp_path / "state").load()
    assert state is not None
    provider_uuid = state.root_provider_uuid
    inventory = api.get(f"/resource_providers/{provider_uuid}/inventories").json()["inventories"]
    assert inventory["VCPU"]["total"] == os.cpu_count()
    # libvirtd is local here, so its node memory stats are this machine's meminfo.
    assert inventory["MEMORY_MB"]["total"] == meminfo_total_mib()
    traits = set(api.get(f"/resource_providers/{provider_uuid}/traits").json()["traits"])
    assert {"HW_ARCH_X86_64", "COMPUTE_NODE", "HW_CPU_X86_SSE2"} <= traits

    with tiny_domain(libvirtd) as domain_uuid:
        unaccounted = run_once(api_server, tmp_path, name)

        assert unaccounted.returncode == Outcome.DRIFT, unaccounted.stderr
        assert f"({domain_uuid}, 1 vCPU, 64 MiB) is running without an allocation" in (
            unaccounted.stderr
        )

        allocation = {
            "allocations": {provider_uuid: {"resources": {"VCPU": 1, "MEMORY_MB": 64}}},
            "project_id": str(uuid.uuid4()),
            "user_id": str(uuid.uuid4()),
            "consumer_generation": None,
            "consumer_type": "INSTANCE",
        }
        assert api.put(f"/allocations/{domain_uuid}", json=allocation).status_code == 204
        accounted = run_once(api_server, tmp_path, name)

        assert domain_uuid not in accounted.stderr
        if not other_domains(domain_uuid):
            assert accounted.returncode == Outcome.SYNCED, accounted.stderr

    gone = run_once(api_server, tmp_path, name)

    assert f"consumer {domain_uuid} holds" in gone.stderr
    assert gone.returncode == Outcome.DRIFT
