"""Utilisation from two passes' counters: the arithmetic, and gaps left out, logged once."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from agent.discovery.model import CpuTopology, Domain, HostFacts, HostUsage
from agent.utilisation import (
    UtilisationMeter,
    cpu_metrics,
    instances_cpu_percent,
    memory_metrics,
)

# virNodeGetCPUStats / virNodeGetMemoryStats as a Linux host answers them (ns, KiB).
CPU_BEFORE = {"kernel": 1_000_000, "user": 3_000_000, "idle": 15_000_000, "iowait": 1_000_000}
CPU_AFTER = {"kernel": 2_000_000, "user": 6_000_000, "idle": 25_000_000, "iowait": 2_000_000}
MEMORY = {"total": 16_777_216, "free": 4_194_304, "buffers": 1_048_576, "cached": 3_145_728}


def host(read_at: float, cpu_times_ns=None, memory_kib=None, domains=()) -> HostFacts:
    return HostFacts(
        hostname="compute-1",
        arch="x86_64",
        logical_cpus=4,
        memory_mib=16384,
        disk_gib=100,
        cpu_model=None,
        cpu_features=frozenset(),
        topology=CpuTopology(sockets=1, cores=4, threads=1, numa_nodes=1),
        numa_cells=(),
        usage=HostUsage(read_at, cpu_times_ns, memory_kib),
        domains=tuple(domains),
    )


def vm(uuid: str, cpu_time_ns: int, active: bool = True) -> Domain:
    return Domain(uuid, uuid, active, vcpus=2, memory_mib=1024, cpu_time_ns=cpu_time_ns)


def test_cpu_percent_is_the_busy_share_of_the_time_between_readings():
    # 15 ms passed: 4 ms busy (kernel + user), 1 ms waiting on IO.
    assert cpu_metrics(CPU_BEFORE, CPU_AFTER) == {
        "cpu.percent": 26.67,
        "cpu.iowait.percent": 6.67,
    }


@pytest.mark.parametrize(
    "after", [CPU_BEFORE, {**CPU_AFTER, "idle": 0}], ids=["still", "counter-reset"]
)
def test_counters_that_did_not_advance_give_no_cpu_figure(after):
    assert cpu_metrics(CPU_BEFORE, after) is None


def test_memory_used_leaves_out_page_cache_and_buffers():
    assert memory_metrics(MEMORY) == {
        "memory.used": 8192.0,
        "memory.total": 16384.0,
        "memory.percent": 50.0,
    }
    assert memory_metrics(None) is None
    assert memory_metrics({"total": 0, "free": 0}) is None


def test_instances_cpu_is_their_cpu_time_over_the_hosts_cpu_time():
    before = host(10.0, domains=[vm("a", 0), vm("b", 5 * 10**9), vm("off", 0, active=False)])
    # Two seconds on 4 CPUs = 8 CPU-seconds; a used 2, b used 1, c is new (no start).
    after = host(12.0, domains=[vm("a", 2 * 10**9), vm("b", 6 * 10**9), vm("c", 10**9)])

    assert instances_cpu_percent(before, after) == 37.5
    assert instances_cpu_percent(after, after) is None


def test_the_meter_gives_rates_from_the_second_pass_and_logs_each_gap_once(caplog):
    meter = UtilisationMeter()
    first = host(0.0, CPU_BEFORE, MEMORY)
    second = host(60.0, CPU_AFTER, MEMORY)

    memory, cpu = memory_metrics(MEMORY), cpu_metrics(CPU_BEFORE, CPU_AFTER)
    assert memory is not None
    assert cpu is not None

    assert meter.measure(first) == memory
    assert meter.measure(second) == {**memory, **cpu, "instances.cpu.percent": 0.0}

    with caplog.at_level(logging.WARNING, logger="agent.utilisation"):
        for at in (120.0, 180.0, 240.0):
            measured = meter.measure(replace(second, usage=HostUsage(at, CPU_AFTER, None)))
            assert set(measured) == {"instances.cpu.percent"}
    gaps = [record.getMessage() for record in caplog.records]
    assert gaps == [
        "memory.* metrics left out of heartbeats: no node memory statistics from libvirt "
        "(getMemoryStats)",
        "cpu.* metrics left out of heartbeats: libvirt's node CPU counters did not advance "
        "between passes",
    ]
