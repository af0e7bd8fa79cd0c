"""Ask a libvirt connection about its host. The only discovery code that talks to libvirt."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

import libvirt

from agent.discovery.capabilities import parse_capabilities
from agent.discovery.host import RawDomain, RawHost

log = logging.getLogger(__name__)


def _ignore_libvirt_error(_context: object, _error: object) -> None:
    """libvirt prints every error to stderr; the agent reports the ones that matter."""


libvirt.registerErrorHandler(_ignore_libvirt_error, None)


class DiscoveryError(RuntimeError):
    """libvirt could not be reached or did not answer."""


def read_host(uri: str, instances_path: Path) -> RawHost:
    """One read-only connection per call, so each pass sees the host as it is now."""
    try:
        connection = libvirt.openReadOnly(uri)
    except libvirt.libvirtError as error:
        raise DiscoveryError(f"cannot connect to libvirt at {uri}: {error}") from error
    try:
        return _read(connection, instances_path)
    except libvirt.libvirtError as error:
        raise DiscoveryError(f"libvirt at {uri} failed: {error}") from error
    finally:
        connection.close()


def _read(connection: libvirt.virConnect, instances_path: Path) -> RawHost:
    capabilities_xml = connection.getCapabilities()
    return RawHost(
        hostname=connection.getHostname(),
        node_info=connection.getInfo(),
        memory_stats=_unless_unsupported(
            lambda: connection.getMemoryStats(libvirt.VIR_NODE_MEMORY_STATS_ALL_CELLS)
        ),
        cpu_stats=_unless_unsupported(
            lambda: connection.getCPUStats(libvirt.VIR_NODE_CPU_STATS_ALL_CPUS)
        ),
        read_at=time.monotonic(),
        capabilities_xml=capabilities_xml,
        expanded_cpu_xml=_expanded_cpu(connection, capabilities_xml),
        domains=[_raw_domain(domain) for domain in connection.listAllDomains()],
        instances_disk_bytes=_disk_bytes(instances_path),
        node_devices_xml=_node_devices(connection),
    )


def _node_devices(connection: libvirt.virConnect) -> list[str]:
    """PCI devices (with their SR-IOV and mdev capabilities) and mediated devices."""
    kinds = libvirt.VIR_CONNECT_LIST_NODE_DEVICES_CAP_PCI_DEV
    kinds |= libvirt.VIR_CONNECT_LIST_NODE_DEVICES_CAP_MDEV
    try:
        devices = connection.listAllDevices(kinds)
    except libvirt.libvirtError as error:
        if error.get_error_code() != libvirt.VIR_ERR_NO_SUPPORT:
            raise
        return []
    return [device.XMLDesc() for device in devices]


def _unless_unsupported(read: Callable[[], dict[str, int]]) -> dict[str, int] | None:
    """A node statistic, or None where the driver does not implement its call."""
    try:
        return read()
    except libvirt.libvirtError as error:
        if error.get_error_code() != libvirt.VIR_ERR_NO_SUPPORT:
            raise
        return None


def _expanded_cpu(connection: libvirt.virConnect, capabilities_xml: str) -> str | None:
    cpu = parse_capabilities(capabilities_xml).cpu
    if cpu.model is None:
        return None
    try:
        expanded: str = connection.baselineCPU(
            [cpu.xml], libvirt.VIR_CONNECT_BASELINE_CPU_EXPAND_FEATURES
        )
    except libvirt.libvirtError as error:
        log.warning("cannot expand CPU model %s to its features: %s", cpu.model, error)
        return None
    return expanded


def _raw_domain(domain: libvirt.virDomain) -> RawDomain:
    return RawDomain(
        uuid=domain.UUIDString(),
        name=domain.name(),
        active=bool(domain.isActive()),
        info=domain.info(),
    )


def _disk_bytes(instances_path: Path) -> int:
    try:
        stats = os.statvfs(instances_path)
    except OSError as error:
        log.warning(
            "cannot measure the instances path %s: %s; no disk reported", instances_path, error
        )
        return 0
    return stats.f_blocks * stats.f_frsize
