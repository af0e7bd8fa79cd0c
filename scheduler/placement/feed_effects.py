"""What a page of change-feed entries means for the scheduler's cache, as data.

Pure: the host cache applies the result in one step. Entries carry the state
after their write (docs/changes.md), so a later entry about the same thing
replaces an earlier one and applying a page twice changes nothing.

- ``allocation``: the usage of every provider and class the write touched;
  the consumer, so that this scheduler's own claims are recognised;
- ``inventory``: the provider's whole inventory, as capacities
  (``(total - reserved) * allocation_ratio``, as Placement shows them);
- ``resource_provider`` (but ``created``: no inventory yet), ``trait``,
  ``aggregate``: the provider's candidates may be different now (name,
  tree, traits, aggregates, or gone);
- ``resource_class`` and the trait catalogue change nothing cached.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Change = Mapping[str, Any]


@dataclass
class ProviderFacts:
    """A provider as a ``resource_provider`` entry leaves it (None: deleted)."""

    name: str
    parent_uuid: str | None
    root_uuid: str


@dataclass
class Effects:
    index: int = 0  # the last entry's
    used: dict[str, dict[str, int]] = field(default_factory=dict)
    capacity: dict[str, dict[str, int]] = field(default_factory=dict)
    consumers: list[str] = field(default_factory=list)
    reshaped: set[str] = field(default_factory=set)  # providers whose candidates may differ
    providers: dict[str, ProviderFacts | None] = field(default_factory=dict)
    aggregates: dict[str, frozenset[str]] = field(default_factory=dict)

    @property
    def structural(self) -> bool:
        """Whether an answer read before this page may now list other hosts."""
        return bool(self.reshaped or self.capacity)


def effects_of(changes: Iterable[Change]) -> Effects:
    effects = Effects()
    for change in changes:
        effects.index = int(change["index"])
        handler = _HANDLERS.get(str(change["resource"]))
        if handler is not None:
            handler(change, effects)
    return effects


def _allocation(change: Change, effects: Effects) -> None:
    effects.consumers.append(str(change["uuid"]))
    for provider, used in (change.get("usages") or {}).items():
        effects.used.setdefault(provider, {}).update(used)


def _inventory(change: Change, effects: Effects) -> None:
    inventories: Mapping[str, Mapping[str, Any]] = change.get("inventories") or {}
    effects.capacity[str(change["uuid"])] = {
        rc: int((record["total"] - record["reserved"]) * record["allocation_ratio"])
        for rc, record in inventories.items()
    }


def _provider(change: Change, effects: Effects) -> None:
    uuid = str(change["uuid"])
    if change["action"] != "created":  # a new provider has no inventory: no candidate yet
        effects.reshaped.add(uuid)
    if change["action"] == "deleted":
        effects.providers[uuid] = None
        effects.capacity.pop(uuid, None)
        effects.used.pop(uuid, None)
        return
    effects.providers[uuid] = ProviderFacts(
        name=str(change["name"]),
        parent_uuid=change.get("parent_uuid"),
        root_uuid=str(change.get("root_uuid") or uuid),
    )


def _trait(change: Change, effects: Effects) -> None:
    if "traits" in change:  # a provider's traits; else the catalogue, cached nowhere
        effects.reshaped.add(str(change["uuid"]))


def _aggregate(change: Change, effects: Effects) -> None:
    uuid = str(change["uuid"])
    effects.reshaped.add(uuid)
    effects.aggregates[uuid] = frozenset(change.get("aggregates") or ())


_HANDLERS = {
    "allocation": _allocation,
    "inventory": _inventory,
    "resource_provider": _provider,
    "trait": _trait,
    "aggregate": _aggregate,
}
