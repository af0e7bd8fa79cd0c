"""Host utilisation for the heartbeat, from the counters of two passes.

Utilisation is what the host and its instances use now. It never touches
inventory or allocations, which are what instances were promised
(docs/liveness.md). Figures the libvirt driver cannot give are left out,
never guessed; each such gap is logged once per agent.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from agent.discovery.model import HostFacts

log = logging.getLogger(__name__)

CPU_PERCENT = "cpu.percent"
CPU_IOWAIT_PERCENT = "cpu.iowait.percent"
MEMORY_USED = "memory.used"
MEMORY_TOTAL = "memory.total"
MEMORY_PERCENT = "memory.percent"
INSTANCES_CPU_PERCENT = "instances.cpu.percent"

_BUSY = ("kernel", "user")
_ALL_CPU = ("kernel", "user", "idle", "iowait")
# Page cache and buffers are handed back on demand: they count as free, as in free(1).
_RECLAIMABLE = ("free", "buffers", "cached")
_KIB_PER_MIB = 1024


def memory_metrics(memory_kib: Mapping[str, int] | None) -> dict[str, float] | None:
    """memory.used/total in MiB and memory.percent, from virNodeGetMemoryStats."""
    if not memory_kib or not memory_kib.get("total") or "free" not in memory_kib:
        return None
    total = memory_kib["total"]
    used = max(total - sum(memory_kib.get(key, 0) for key in _RECLAIMABLE), 0)
    return {
        MEMORY_USED: round(used / _KIB_PER_MIB, 1),
        MEMORY_TOTAL: round(total / _KIB_PER_MIB, 1),
        MEMORY_PERCENT: round(100 * used / total, 2),
    }


def cpu_metrics(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, float] | None:
    """cpu.percent (kernel + user) and cpu.iowait.percent of the CPU time between
    two virNodeGetCPUStats readings; None when the counters did not advance."""
    moved = {key: after[key] - before.get(key, 0) for key in _ALL_CPU if key in after}
    elapsed = sum(moved.values())
    if elapsed <= 0 or any(step < 0 for step in moved.values()):
        return None
    busy = sum(moved.get(key, 0) for key in _BUSY)
    metrics = {CPU_PERCENT: round(100 * busy / elapsed, 2)}
    if "iowait" in moved:
        metrics[CPU_IOWAIT_PERCENT] = round(100 * moved["iowait"] / elapsed, 2)
    return metrics


def instances_cpu_percent(before: HostFacts, after: HostFacts) -> float | None:
    """The host's CPU share the running domains used between two passes, from
    the CPU time each domain's info() gives (read each pass anyway: no extra
    call). A domain first seen in ``after`` has no start to count from."""
    elapsed_ns = (after.usage.read_at - before.usage.read_at) * 1e9
    if elapsed_ns <= 0 or after.logical_cpus <= 0:
        return None
    started = {domain.uuid: domain.cpu_time_ns for domain in before.running_domains}
    used = sum(
        max(domain.cpu_time_ns - started[domain.uuid], 0)
        for domain in after.running_domains
        if domain.uuid in started
    )
    return round(100 * used / (elapsed_ns * after.logical_cpus), 2)


class UtilisationMeter:
    """Turns each pass's facts into metrics; keeps the previous pass's, and
    which missing figures it has already logged."""

    def __init__(self) -> None:
        self._previous: HostFacts | None = None
        self._logged: set[str] = set()

    def measure(self, facts: HostFacts) -> dict[str, float]:
        metrics: dict[str, float] = {}
        memory = memory_metrics(facts.usage.memory_kib)
        if memory is None:
            self._once("memory", "no node memory statistics from libvirt (getMemoryStats)")
        else:
            metrics |= memory
        previous, self._previous = self._previous, facts
        if previous is None:  # rates need two passes
            return metrics
        if facts.usage.cpu_times_ns is None or previous.usage.cpu_times_ns is None:
            self._once("cpu", "no node CPU statistics from libvirt (getCPUStats)")
        else:
            cpu = cpu_metrics(previous.usage.cpu_times_ns, facts.usage.cpu_times_ns)
            if cpu is None:
                self._once("cpu", "libvirt's node CPU counters did not advance between passes")
            else:
                metrics |= cpu
        instances = instances_cpu_percent(previous, facts)
        if instances is not None:
            metrics[INSTANCES_CPU_PERCENT] = instances
        return metrics

    def _once(self, metrics: str, why: str) -> None:
        if metrics not in self._logged:
            self._logged.add(metrics)
            log.warning("%s.* metrics left out of heartbeats: %s", metrics, why)
