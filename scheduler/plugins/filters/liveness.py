"""A host whose agent stopped sending heartbeats (``GET /heartbeats``: now is past
its ``down_after``) is not chosen. Hosts that never sent one pass: their
liveness is unknown, and the explanation says so."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from scheduler.placement.heartbeats import HeartbeatSnapshot
from scheduler.placement.host_state import HostState
from scheduler.plugins.base import PASS, HostFilter, Verdict, pass_noting, reject
from scheduler.plugins.cycle import Cycle
from scheduler.plugins.heartbeats import HEARTBEATS, read_heartbeats, rfc3339

NO_HEARTBEAT = "liveness unknown: no heartbeat from this host"
NO_HEARTBEATS_API = "liveness unknown: Placement offers no GET /heartbeats"
UNKNOWN = pass_noting(NO_HEARTBEAT)
UNSUPPORTED = pass_noting(NO_HEARTBEATS_API)


class LivenessFilter(HostFilter):
    name = "liveness"
    description = "Removes hosts whose agent has missed its heartbeats (GET /heartbeats)."

    async def prepare(self, cycle: Cycle) -> None:
        await read_heartbeats(cycle)

    def applies(self, context: Cycle) -> bool:
        return HEARTBEATS in context.state

    def verdict(self, host: HostState, context: Cycle) -> Verdict:
        return self.verdicts([host], context)[0]

    def verdicts(self, hosts: Sequence[HostState], context: Cycle) -> list[Verdict]:
        heartbeats = context.state.read(HEARTBEATS)
        if not heartbeats.supported:
            return [UNSUPPORTED] * len(hosts)
        if not heartbeats.by_host:
            return [UNKNOWN] * len(hosts)
        now = heartbeats.now()  # once: every host is judged at the same moment
        return [_verdict(heartbeats, host.uuid, now) for host in hosts]


def _verdict(heartbeats: HeartbeatSnapshot, host: str, now: datetime | None) -> Verdict:
    if host not in heartbeats.by_host:
        return UNKNOWN
    down_since = heartbeats.down_since(host, now)
    if down_since is not None:
        return reject(f"agent down since {rfc3339(down_since)}")
    return PASS
