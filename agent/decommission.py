"""``placement-agent decommission``: remove a dead host's provider tree over the API.

Nothing is deleted while any provider of the tree holds an allocation: the
command lists the consumers instead. Otherwise providers go children first;
each one's generation is compared with the one seen when the tree was
checked, so a tree that changed meanwhile stops the removal with one message.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console

from agent.placement import AgentPlacement, ProviderRecord, children_first
from placement_client import Conflict, NotFound, PlacementError


class Status(enum.IntEnum):
    """Also the exit status of ``placement-agent decommission``."""

    DONE = 0
    FAILED = 1
    IN_USE = 4
    CHANGED = 5


@dataclass(frozen=True)
class Holding:
    consumer: str
    provider: ProviderRecord
    resources: dict[str, int]


@dataclass
class Decommission:
    status: Status
    message: str
    # Children before parents: the order they are (or would be) deleted in.
    providers: list[ProviderRecord] = field(default_factory=list)
    holdings: list[Holding] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)


async def decommission(client: AgentPlacement, host: str, dry_run: bool) -> Decommission:
    try:
        return await _decommission(client, host, dry_run)
    except PlacementError as error:
        return Decommission(Status.FAILED, str(error))


async def _decommission(client: AgentPlacement, host: str, dry_run: bool) -> Decommission:
    root = await _find_root(client, host)
    if isinstance(root, str):
        return Decommission(Status.FAILED, root)
    listed = {p.uuid: p for p in await client.list_tree(root.uuid)}
    providers = children_first(listed)
    result = Decommission(Status.DONE, "", providers)
    for provider in providers:
        snapshot = await client.get_allocations_snapshot(provider.uuid)
        if snapshot.generation != provider.generation:
            return _changed(result, provider, snapshot.generation)
        result.holdings += [
            Holding(consumer, provider, held) for consumer, held in snapshot.allocations.items()
        ]
    if result.holdings:
        consumers = len({h.consumer for h in result.holdings})
        result.status, result.message = (
            Status.IN_USE,
            f"{root.name} ({root.uuid}): {consumers} consumer(s) still hold allocations in its "
            "tree; delete or move them first. Nothing was deleted.",
        )
        return result
    if dry_run:
        result.message = f"would delete {len(providers)} provider(s) of {root.name} ({root.uuid})"
        return result
    for provider in providers:
        outcome = await _delete(client, provider)
        if outcome is not None:
            return _changed(result, provider, outcome)
        result.deleted.append(provider.uuid)
    result.message = f"deleted {len(providers)} provider(s) of {root.name} ({root.uuid})"
    return result


async def _find_root(client: AgentPlacement, host: str) -> ProviderRecord | str:
    """The host's root provider, by uuid or name; a message when there is none."""
    found = await client.get_provider(host) if _is_uuid(host) else None
    found = found or await client.find_provider_by_name(host)
    if found is None:
        return f"no resource provider has the name or uuid {host}"
    if found.parent_uuid is not None:
        return (
            f"{found.name} ({found.uuid}) is a child of {found.root_uuid}: "
            "name the host's root provider"
        )
    return found


async def _delete(client: AgentPlacement, provider: ProviderRecord) -> int | str | None:
    """None when deleted (or already gone); else the new generation or the server's refusal."""
    current = await client.get_provider(provider.uuid)
    if current is None:
        return None
    if current.generation != provider.generation:
        return current.generation
    try:
        await client.delete_provider(provider.uuid)
    except NotFound:
        return None
    except Conflict as refused:
        return refused.detail
    return None


def _changed(result: Decommission, provider: ProviderRecord, why: int | str) -> Decommission:
    change = (
        f"its generation moved from {provider.generation} to {why}" if isinstance(why, int) else why
    )
    done = f"{len(result.deleted)} provider(s) were deleted before it" if result.deleted else ""
    result.status = Status.CHANGED
    result.message = (
        f"provider {provider.name} ({provider.uuid}) changed since the tree was checked: "
        f"{change}. {done or 'Nothing was deleted'}; look again and rerun."
    )
    return result


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def document(result: Decommission, dry_run: bool) -> dict[str, Any]:
    return {
        "status": result.status.name.lower(),
        "message": result.message,
        "dry_run": dry_run,
        "providers": [{"uuid": p.uuid, "name": p.name} for p in result.providers],
        "deleted": result.deleted,
        "holdings": [
            {"consumer": h.consumer, "provider": h.provider.uuid, "resources": h.resources}
            for h in result.holdings
        ],
    }


def print_result(console: Console, result: Decommission) -> None:
    """One line per holding, whole uuids on it: operators grep and paste them."""
    for holding in sorted(result.holdings, key=lambda h: (h.consumer, h.provider.name)):
        amounts = ", ".join(f"{rc}={n}" for rc, n in sorted(holding.resources.items()))
        console.print(
            f"consumer {holding.consumer} holds {amounts} on {holding.provider.name} "
            f"({holding.provider.uuid})",
            soft_wrap=True,
            highlight=False,
        )
    color = "green" if result.status is Status.DONE else "red"
    console.print(f"[{color}]{result.message}[/{color}]", soft_wrap=True, highlight=False)
