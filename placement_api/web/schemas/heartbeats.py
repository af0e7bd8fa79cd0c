"""Host heartbeats (an extension of this service): request, query and response models.

The shapes are fixed here; how many metrics a heartbeat may carry, how long
their names and how large their values may be are settings
(``heartbeat_max_*``), checked by ``check_metric_limits``.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import Field

from placement_api import errors
from placement_api.settings import Settings
from placement_api.web.schemas.common import RequestModel, ResponseModel, Uuid, pattern_keyed_object

# A day: a host reporting less often than that is not being watched.
MAX_INTERVAL = 86_400
METRIC_NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$"

Metrics = Annotated[dict[str, float], pattern_keyed_object(METRIC_NAME_PATTERN, {"type": "number"})]


class HeartbeatUpdate(RequestModel):
    """PUT /resource_providers/{uuid}/heartbeat. Without ``metrics`` the last ones are
    kept (with their ``metrics_at``); with them, they replace the last ones whole."""

    interval: Annotated[int, Field(ge=1, le=MAX_INTERVAL)] = Field(
        description="Seconds until the next heartbeat: the sender's reporting period."
    )
    metrics: Metrics | None = Field(
        default=None,
        description="Utilisation measured now, by name (cpu.percent, memory.used, "
        "memory.total, memory.percent, ...).",
    )


class HeartbeatsQuery(RequestModel):
    """GET /heartbeats: only the hosts alive (or down), only one tree's root."""

    alive: Literal["true", "false"] | None = None
    in_tree: Uuid | None = None


class Heartbeat(ResponseModel):
    """A root provider's last heartbeat. Times are RFC 3339, UTC, by the server's clock."""

    resource_provider_uuid: str
    last_seen: str
    interval: int
    down_after: str = Field(
        description="last_seen + PLACEMENT_HEARTBEAT_MISSED_INTERVALS x interval."
    )
    metrics: dict[str, float]
    metrics_at: str | None = Field(description="When the metrics were sent; null: never.")


class HeartbeatEntry(Heartbeat):
    name: str
    alive: bool = Field(description="now <= down_after.")


class HeartbeatList(ResponseModel):
    """Every root provider that ever sent a heartbeat (others are absent: unknown)."""

    now: str = Field(description="The server's clock when read: compare down_after with it.")
    heartbeats: list[HeartbeatEntry]


def check_metric_count(body: Any, settings: Settings) -> None:
    """Before validation, so a body of a million metrics is refused at once."""
    metrics = body.get("metrics") if isinstance(body, dict) else None
    limit = settings.heartbeat_max_metrics
    if isinstance(metrics, dict) and len(metrics) > limit:
        raise errors.BadRequest(
            f"The heartbeat carries {len(metrics)} metrics; at most {limit} are accepted."
        )


def check_metric_limits(metrics: dict[str, float], settings: Settings) -> None:
    longest = settings.heartbeat_max_metric_name_length
    largest = settings.heartbeat_max_metric_value
    for name, value in metrics.items():
        if len(name) > longest:
            raise errors.BadRequest(
                f"Metric name {name[:longest]}... is longer than {longest} characters."
            )
        if not math.isfinite(value) or abs(value) > largest:
            raise errors.BadRequest(
                f"Metric {name} is {value}; values must lie within +/-{largest:g}."
            )
