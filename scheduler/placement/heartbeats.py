"""``GET /heartbeats`` (an extension of this API, see docs/liveness.md): each
host agent's last heartbeat and the utilisation it reported.

The server is the one clock: a snapshot keeps the answer's ``now`` and moves it
forward by the local time passed since the read, so a snapshot kept for a while
(by whoever owns its freshness) still tells who is down *now*. Hosts that never
sent a heartbeat are absent: their liveness is unknown.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field

Clock = Callable[[], float]


class Heartbeat(BaseModel):
    model_config = ConfigDict(extra="ignore")

    resource_provider_uuid: str
    name: str = ""
    last_seen: datetime
    interval: int
    down_after: datetime
    alive: bool
    metrics: dict[str, float] = Field(default_factory=dict)
    metrics_at: datetime | None = None


class HeartbeatsAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    now: datetime
    heartbeats: list[Heartbeat]


@dataclass(frozen=True)
class HeartbeatSnapshot:
    """Heartbeats by host uuid as read at ``read_at`` (local clock). ``supported`` is
    False when the API has no ``GET /heartbeats`` (an upstream Placement)."""

    by_host: Mapping[str, Heartbeat] = field(default_factory=dict)
    server_now: datetime | None = None
    read_at: float = 0.0
    clock: Clock = time.monotonic
    supported: bool = True

    @classmethod
    def of(cls, answer: HeartbeatsAnswer | None, clock: Clock) -> HeartbeatSnapshot:
        if answer is None:
            return cls(read_at=clock(), clock=clock, supported=False)
        by_host = {beat.resource_provider_uuid: beat for beat in answer.heartbeats}
        return cls(by_host, answer.now, clock(), clock)

    def now(self) -> datetime | None:
        if self.server_now is None:
            return None
        return self.server_now + timedelta(seconds=self.clock() - self.read_at)

    def down_since(self, host: str, at: datetime | None = None) -> datetime | None:
        """When the host was last heard of, if it is down now (or ``at``, a moment
        ``now`` gave); None when up or unknown."""
        beat, now = self.by_host.get(host), at or self.now()
        if beat is None or now is None or now <= beat.down_after:
            return None
        return beat.last_seen

    def fresh_metrics(self, host: str) -> Mapping[str, float] | None:
        """The host's metrics while its agent is up and they are no older than the
        window a heartbeat is trusted for (``down_after - last_seen``)."""
        beat, now = self.by_host.get(host), self.now()
        if beat is None or now is None or beat.metrics_at is None or now > beat.down_after:
            return None
        if now - beat.metrics_at > beat.down_after - beat.last_seen:
            return None
        return beat.metrics
