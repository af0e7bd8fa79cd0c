"""Server groups: a claim that names a group keeps the group's rule, atomically.

An extension of the allocation write (docs/server-groups.md). The claim locks
the group's row first (created by the first claim naming it), so concurrent
claims of one group queue on it, then writes as any claim does
(``claims.replace_allocations``), records the named consumers as members and
checks the rule against where every member's allocations now are, in the same
transaction: a write that breaks the rule is a 409 and is rolled back. A
member runs on the root of each provider it holds allocations on (sharing
providers, ``MISC_SHARES_VIA_AGGREGATE``, are not hosts).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import ColumnElement, delete, exists, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from placement_api import errors
from placement_api.db import dialect
from placement_api.db.dialect import insert_ignoring_duplicates
from placement_api.db.models import (
    Allocation,
    Consumer,
    ProviderTrait,
    ResourceProvider,
    ServerGroup,
    ServerGroupMember,
    Trait,
)
from placement_api.domain import claims
from placement_api.domain.consumers import ConsumerClaim

AFFINITY = "affinity"
ANTI_AFFINITY = "anti-affinity"
POLICIES = (AFFINITY, ANTI_AFFINITY, "soft-affinity", "soft-anti-affinity")
SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"


@dataclass(frozen=True)
class GroupRule:
    """The group a claim names, as the claim states its rule."""

    uuid: str
    policy: str
    max_server_per_host: int = 1


@dataclass(frozen=True)
class GroupView:
    uuid: str
    policy: str
    max_server_per_host: int
    members: dict[str, list[str]]  # consumer uuid -> hosts (root provider uuids)


def _violation(detail: str) -> errors.Conflict:
    return errors.Conflict(
        detail, code=errors.SERVER_GROUP_VIOLATION, extra={"conflict": errors.CONFLICT_SERVER_GROUP}
    )


def _groups_of(
    batch: Sequence[ConsumerClaim], groups: Mapping[str, GroupRule]
) -> dict[str, tuple[GroupRule, list[str]]]:
    """Group uuid -> (its rule, the consumers of the batch naming it)."""
    named: dict[str, tuple[GroupRule, list[str]]] = {}
    for claim in batch:
        rule = groups.get(claim.uuid)
        if rule is None:
            continue
        if rule.uuid in named and named[rule.uuid][0] != rule:
            raise errors.BadRequest(f"Server group {rule.uuid} is named with different rules.")
        named.setdefault(rule.uuid, (rule, []))[1].append(claim.uuid)
    return named


async def replace_allocations(
    session: AsyncSession,
    batch: Sequence[ConsumerClaim],
    groups: Mapping[str, GroupRule],
    *,
    failure: str,
) -> None:
    """``claims.replace_allocations``, keeping the rule of every group named in
    ``groups`` (consumer uuid -> its group)."""
    named = _groups_of(batch, groups)
    ids = {uuid: await _lock(session, named[uuid][0]) for uuid in sorted(named)}
    await claims.replace_allocations(session, batch, failure=failure)
    holding = {claim.uuid for claim in batch if claim.allocations}
    for uuid, (rule, consumers) in named.items():
        joining = [c for c in consumers if c in holding]
        await insert_ignoring_duplicates(
            session,
            ServerGroupMember.__table__,  # type: ignore[arg-type]
            [{"group_id": ids[uuid], "consumer_uuid": c} for c in joining],
        )
        await _forget_members_holding_nothing(session, ids[uuid])
        if rule.policy == ANTI_AFFINITY:
            # Only the hosts the write landed on can have too many members now.
            hosts = await _hosts_of_members(session, ids[uuid], near=joining)
        elif rule.policy == AFFINITY:
            hosts = await _hosts_of_members(session, ids[uuid])
        else:
            continue  # the soft policies only weigh: membership is all they need
        check_rule(rule, hosts, set(joining))


async def _lock(session: AsyncSession, rule: GroupRule) -> int:
    """The group's id, its row locked (created by its first claim); 409 when the
    group exists with another rule."""
    # One statement creates the row or, when it exists, locks it (ON CONFLICT DO
    # UPDATE takes the row lock, as SELECT ... FOR UPDATE would, on PostgreSQL).
    table = ServerGroup.__table__
    upsert = dialect.insert(session, table).values(  # type: ignore[arg-type]
        uuid=rule.uuid, policy=rule.policy, max_server_per_host=rule.max_server_per_host
    )
    upsert = upsert.on_conflict_do_update(
        index_elements=[table.c.uuid], set_={"uuid": upsert.excluded.uuid}
    )
    statement = upsert.returning(table.c.id, table.c.policy, table.c.max_server_per_host)
    row = (await session.execute(statement)).one()
    if (row.policy, row.max_server_per_host) != (rule.policy, rule.max_server_per_host):
        raise _violation(
            f"Server group {rule.uuid} has policy {row.policy} with max_server_per_host "
            f"{row.max_server_per_host}; the claim named {rule.policy} with "
            f"{rule.max_server_per_host}."
        )
    return int(row.id)


async def _forget_members_holding_nothing(session: AsyncSession, group_id: int) -> None:
    holds = exists().where(Consumer.uuid == ServerGroupMember.consumer_uuid)
    await session.execute(
        delete(ServerGroupMember).where(ServerGroupMember.group_id == group_id, ~holds)
    )


def _not_sharing() -> ColumnElement[bool]:
    sharing = (
        select(ProviderTrait.resource_provider_id)
        .join(Trait, Trait.id == ProviderTrait.trait_id)
        .where(Trait.name == SHARING_TRAIT)
    )
    return ResourceProvider.id.not_in(sharing)


async def _hosts_of_members(
    session: AsyncSession, group_id: int, *, near: Sequence[str] | None = None
) -> dict[str, set[str]]:
    """consumer uuid -> the roots of the providers it holds allocations on; with
    ``near``, only on the roots those consumers hold allocations on (one statement)."""
    root = aliased(ResourceProvider)
    statement = (
        select(ServerGroupMember.consumer_uuid, root.uuid)
        .join(Consumer, Consumer.uuid == ServerGroupMember.consumer_uuid)
        .join(Allocation, Allocation.consumer_id == Consumer.id)
        .join(ResourceProvider, ResourceProvider.id == Allocation.resource_provider_id)
        .join(root, root.id == ResourceProvider.root_provider_id)
        .where(ServerGroupMember.group_id == group_id, _not_sharing())
        .distinct()
    )
    if near is not None:
        landed = (
            select(ResourceProvider.root_provider_id)
            .join(Allocation, Allocation.resource_provider_id == ResourceProvider.id)
            .join(Consumer, Consumer.id == Allocation.consumer_id)
            .where(Consumer.uuid.in_(near), _not_sharing())
        )
        statement = statement.where(root.id.in_(landed))
    hosts: dict[str, set[str]] = defaultdict(set)
    for consumer, host in await session.execute(statement):
        hosts[consumer].add(host)
    return hosts


def check_rule(rule: GroupRule, hosts: Mapping[str, set[str]], joining: set[str]) -> None:
    """Raise when the members just written break the rule where they landed."""
    landed = {host for consumer in joining for host in hosts.get(consumer, ())}
    if rule.policy == ANTI_AFFINITY:
        for host in sorted(landed):
            members = sorted(c for c, on in hosts.items() if host in on)
            if len(members) > rule.max_server_per_host:
                raise _violation(
                    f"Server group {rule.uuid} (anti-affinity) would have {len(members)} "
                    f"members on host {host}, more than max_server_per_host "
                    f"{rule.max_server_per_host}: {', '.join(members)}."
                )
    elif rule.policy == AFFINITY:
        others = {host for c, on in hosts.items() if c not in joining for host in on}
        if (landed - others) if others else len(landed) > 1:
            where = ", ".join(sorted(others | landed))
            raise _violation(
                f"Server group {rule.uuid} (affinity) must stay on one host; "
                f"its members would be on {where}."
            )


async def show(session: AsyncSession, uuid: str) -> GroupView:
    row = (
        await session.execute(
            select(ServerGroup.id, ServerGroup.policy, ServerGroup.max_server_per_host).where(
                ServerGroup.uuid == uuid
            )
        )
    ).one_or_none()
    if row is None:
        raise errors.NotFound(f"No server group {uuid}.")
    hosts = await _hosts_of_members(session, int(row.id))
    listed = await session.execute(
        select(ServerGroupMember.consumer_uuid).where(ServerGroupMember.group_id == row.id)
    )
    members = {consumer: sorted(hosts.get(consumer, ())) for (consumer,) in listed}
    return GroupView(uuid, row.policy, row.max_server_per_host, members)


async def of_member(session: AsyncSession, consumer: str) -> list[GroupView]:
    """The groups the consumer is a member of (one, as the scheduler claims)."""
    found = await session.execute(
        select(ServerGroup.uuid)
        .join(ServerGroupMember, ServerGroupMember.group_id == ServerGroup.id)
        .where(ServerGroupMember.consumer_uuid == consumer)
        .order_by(ServerGroup.uuid)
    )
    return [await show(session, uuid) for (uuid,) in found]
