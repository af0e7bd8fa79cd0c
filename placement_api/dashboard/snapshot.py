"""What the page shows, built from the API's answers: pure functions, no I/O.

A ``Snapshot`` is made from ``Reads``: ``GET /capacity`` without resources
(usage per class, the aggregate and zone breakdowns, hosts disabled or down
left out and counted apart), ``GET /capacity?by=host&include_unavailable=true``
(every host, with its state, zones, aggregates and consumers), one ``GET
/capacity`` per flavor (its fits) and the last ``GET /heartbeats`` (liveness
and the utilisation the agents send). Browsers read it through two views:
the summary (totals, zones, aggregates, down and over-capacity hosts, recent
changes, the usage history) and one page of hosts at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Json = dict[str, Any]
HostFilter = Literal["all", "over", "down", "disabled"]
HostOrder = Literal["name", "usage", "free"]
# Long lists in the summary are cut here; their full length is given beside them.
LISTED_AT_MOST = 100
HEARTBEAT_KEYS = ("resource_provider_uuid", "name", "last_seen", "down_after")
# The agent's utilisation figures the page shows (docs/liveness.md).
UTILISATION = ("cpu.percent", "memory.percent", "instances.cpu.percent")


@dataclass(frozen=True)
class Liveness:
    """``GET /heartbeats``' answer; ``available`` False when the API has no such
    route (404) or refused it: liveness is then unknown, not "all alive"."""

    available: bool
    reason: str | None = None  # why it is not available
    now: str | None = None
    beats: tuple[Json, ...] = ()

    @property
    def down(self) -> tuple[Json, ...]:
        return tuple(beat for beat in self.beats if not beat.get("alive", True))


@dataclass(frozen=True)
class Reads:
    """One re-read's answers (see the module's docstring)."""

    usage: Json
    hosts: Json
    fits: Mapping[str, Json]
    # Why the per-host detail could not be read (its policy refused it), if so.
    hosts_refused: str | None = None


@dataclass(frozen=True)
class HostRow:
    uuid: str
    name: str
    resources: Mapping[str, Json]
    fits: Mapping[str, int | None]  # None: not counted (disabled or down)
    down: bool
    disabled: bool
    consumers: int
    zones: tuple[str, ...]
    aggregates: tuple[str, ...]  # names where the aggregates file gives one, else uuids
    utilisation: Mapping[str, float]
    last_seen: str | None
    over_capacity: tuple[str, ...]  # the classes whose used exceeds capacity
    peak_share: float  # the highest used/capacity among its classes
    search_key: str

    def as_json(self) -> Json:
        return {
            "uuid": self.uuid,
            "name": self.name,
            "resources": self.resources,
            "fits": self.fits,
            "down": self.down,
            "disabled": self.disabled,
            "consumers": self.consumers,
            "zones": list(self.zones),
            "aggregates": list(self.aggregates),
            "utilisation": self.utilisation,
            "last_seen": self.last_seen,
            "over_capacity": list(self.over_capacity),
        }


@dataclass(frozen=True)
class Snapshot:
    version: int = 0
    read_at: str | None = None  # when capacity was last read successfully
    feed_index: int | None = None
    error: str | None = None
    flavors: tuple[str, ...] = ()
    summary: Json = field(default_factory=dict)
    hosts: tuple[HostRow, ...] = ()


def build_snapshot(
    reads: Reads,
    liveness: Liveness,
    changes: Iterable[Json],
    history: Iterable[Json] = (),
    **state: Any,
) -> Snapshot:
    """The snapshot of these answers; ``state`` carries version, read_at, feed_index, error."""
    usage, fits = reads.usage, reads.fits
    beats = {beat["resource_provider_uuid"]: beat for beat in liveness.beats}
    # Indexed once per answer: a scan per host would be quadratic at 10,000 hosts.
    fits_by_host = {
        flavor: {host["uuid"]: host["fits"] for host in answer.get("hosts") or []}
        for flavor, answer in fits.items()
    }
    names = {a["uuid"]: a["name"] for a in usage.get("aggregates") or [] if a.get("name")}
    rows = tuple(
        sorted(
            (_row(host, fits_by_host, beats, names) for host in reads.hosts.get("hosts") or []),
            key=_by_name,
        )
    )
    by_uuid = {row.uuid: row.name for row in rows}
    # Sharing providers (a disk pool) are not hosts, but can be over capacity too.
    shared = (_row(p, {}, {}, {}) for p in reads.hosts.get("sharing_providers") or [])
    over = [row for row in (*rows, *shared) if row.over_capacity]
    unavailable = usage.get("unavailable") or {}
    summary = {
        "counting": usage.get("counting"),
        # Unknown (None) when the host detail was refused.
        "host_count": None
        if reads.hosts_refused
        else sum(1 for row in rows if not (row.down or row.disabled)),
        "resource_classes": usage.get("resource_classes", {}),
        "fits": {flavor: answer["fits"] for flavor, answer in fits.items()},
        "unavailable": {
            "hosts": unavailable.get("hosts", 0),
            "down": unavailable.get("down", 0),
            "disabled": unavailable.get("disabled", 0),
            "fits": {f: (a.get("unavailable") or {}).get("fits", 0) for f, a in fits.items()},
        },
        "availability_zones": _breakdown(usage.get("availability_zones") or [], fits, "name"),
        "aggregates": _breakdown(usage.get("aggregates") or [], fits, "uuid"),
        "liveness": _liveness(liveness),
        "over_capacity": {
            "count": len(over),
            "hosts": [_over_capacity(row) for row in over[:LISTED_AT_MOST]],
        },
        "changes": [describe_change(change, by_uuid) for change in changes],
        "history": list(history),
        "host_detail": {"available": reads.hosts_refused is None, "reason": reads.hosts_refused},
    }
    return Snapshot(flavors=tuple(fits), summary=summary, hosts=rows, **state)


def _row(
    host: Json,
    fits_by_host: Mapping[str, dict[str, int]],
    beats: Mapping[str, Json],
    aggregate_names: Mapping[str, str],
) -> HostRow:
    resources: Mapping[str, Json] = host.get("resources", {})
    over = tuple(sorted(rc for rc, figures in resources.items() if figures["free"] < 0))
    shares = [_share(figures) for figures in resources.values()]
    beat = beats.get(host["uuid"])
    # The heartbeats are read more often than capacity: theirs is the fresher word.
    down = not beat["alive"] if beat is not None else bool(host.get("down"))
    metrics: Mapping[str, float] = (beat or {}).get("metrics") or {}
    return HostRow(
        uuid=host["uuid"],
        name=host["name"],
        resources=resources,
        fits={flavor: hosts.get(host["uuid"]) for flavor, hosts in fits_by_host.items()},
        down=down,
        disabled=bool(host.get("disabled")),
        consumers=int(host.get("consumers", 0)),
        zones=tuple(host.get("availability_zones") or ()),
        aggregates=tuple(aggregate_names.get(a, a) for a in host.get("aggregates") or ()),
        utilisation={key: metrics[key] for key in UTILISATION if key in metrics},
        last_seen=beat["last_seen"] if beat is not None else None,
        over_capacity=over,
        peak_share=max(shares, default=0.0),
        search_key=f"{host['name']} {host['uuid']}".lower(),
    )


def _share(figures: Json) -> float:
    """used / capacity; any use of no capacity counts as full."""
    if figures["capacity"] > 0:
        return float(figures["used"] / figures["capacity"])
    return float(figures["used"] > 0)


def _by_name(row: HostRow) -> tuple[str, str]:
    return row.name, row.uuid


def _breakdown(groups: list[Json], fits: Mapping[str, Json], key: str) -> list[Json]:
    """Each zone or aggregate of the usage answer with its fits per flavor."""
    fits_by_group = {
        flavor: {group[key]: group.get("fits") or 0 for group in answer.get(_plural(key)) or []}
        for flavor, answer in fits.items()
    }
    return [
        {**group, "fits": {flavor: fits_by_group[flavor].get(group[key], 0) for flavor in fits}}
        for group in groups
    ]


def _plural(key: str) -> str:
    return "availability_zones" if key == "name" else "aggregates"


def _liveness(liveness: Liveness) -> Json:
    down = sorted(
        liveness.down, key=lambda beat: (beat.get("name") or "", beat["resource_provider_uuid"])
    )
    return {
        "available": liveness.available,
        "reason": liveness.reason,
        "now": liveness.now,
        "down_count": len(down),
        "down": [{key: beat.get(key) for key in HEARTBEAT_KEYS} for beat in down[:LISTED_AT_MOST]],
    }


def _over_capacity(row: HostRow) -> Json:
    return {
        "uuid": row.uuid,
        "name": row.name,
        "classes": {rc: row.resources[rc] for rc in row.over_capacity},
    }


def describe_change(change: Json, names: Mapping[str, str]) -> Json:
    """A change-feed entry as one line of the page: which providers it touched, by name."""
    resource = change.get("resource")
    if resource == "allocation":
        touched = sorted({*change.get("usages", {}), *change.get("allocations", {})})
        providers = [names.get(uuid, uuid) for uuid in touched]
    elif resource in {"resource_provider", "inventory", "aggregate"} or (
        resource == "trait" and "traits" in change
    ):
        providers = [change.get("name") or names.get(change["uuid"], change["uuid"])]
    else:
        providers = []
    return {
        "index": change["index"],
        "resource": resource,
        "action": change.get("action"),
        "uuid": change.get("uuid"),
        "providers": providers,
        "seen_at": change.get("seen_at"),
    }


def host_page(
    snapshot: Snapshot,
    *,
    query: str = "",
    only: HostFilter = "all",
    order: HostOrder = "name",
    page: int = 1,
    per_page: int = 50,
) -> Json:
    """One page of the hosts that match: never the whole list."""
    needle = query.strip().lower()
    rows: Iterable[HostRow] = snapshot.hosts
    if needle:
        rows = (row for row in rows if needle in row.search_key)
    if only == "over":
        rows = (row for row in rows if row.over_capacity)
    elif only == "down":
        rows = (row for row in rows if row.down)
    elif only == "disabled":
        rows = (row for row in rows if row.disabled)
    matched = list(rows)
    if order == "usage":
        matched.sort(key=lambda row: -row.peak_share)
    elif order == "free":
        matched.sort(key=lambda row: row.peak_share)
    pages = max(1, -(-len(matched) // per_page))
    page = min(page, pages)
    start = (page - 1) * per_page
    return {
        "version": snapshot.version,
        "total": len(matched),
        "page": page,
        "pages": pages,
        "per_page": per_page,
        "flavors": list(snapshot.flavors),
        "hosts": [row.as_json() for row in matched[start : start + per_page]],
    }
