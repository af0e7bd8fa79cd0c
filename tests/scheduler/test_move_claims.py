"""What a move's claim writes: the consumer's destination and its migration consumer's
source, in one body; and the terms the no-candidates host counts probe."""

from __future__ import annotations

from flavors.request_group import RequestGroup
from scheduler.placement.client import (
    AllocationRequest,
    GroupRule,
    MovingFrom,
    NewClaim,
    ProviderAllocation,
)
from scheduler.placement.failing_terms import probes
from scheduler.request.move import migration_uuid

CONSUMER = "7e2d9c41-5b3a-4f6e-8d2c-1a9b0e4f3c25"


def test_a_move_claim_writes_the_destination_and_hands_the_source_to_the_migration() -> None:
    destination = AllocationRequest(allocations={"dst": ProviderAllocation(resources={"VCPU": 4})})
    moving = MovingFrom(7, migration_uuid(CONSUMER), {"src": {"VCPU": 2}}, "MIGRATION")
    group = GroupRule("g", "anti-affinity")
    claim = NewClaim(CONSUMER, destination, "p", "u", group, moving)
    bodies = claim.bodies("INSTANCE")
    assert claim.consumers == {CONSUMER, moving.migration}
    assert bodies[CONSUMER] == {
        "allocations": {"dst": {"resources": {"VCPU": 4}}},
        "project_id": "p",
        "user_id": "u",
        "consumer_generation": 7,
        "consumer_type": "INSTANCE",
        "server_group": {"uuid": "g", "policy": "anti-affinity", "max_server_per_host": 1},
    }
    assert bodies[moving.migration] == {
        "allocations": {"src": {"resources": {"VCPU": 2}}},
        "project_id": "p",
        "user_id": "u",
        "consumer_generation": None,
        "consumer_type": "MIGRATION",
    }


def test_the_migration_consumer_is_the_same_for_every_scheduler_and_distinct() -> None:
    assert migration_uuid(CONSUMER) == migration_uuid(CONSUMER.upper())
    assert migration_uuid(CONSUMER) != CONSUMER


def test_every_term_of_a_group_is_probed_under_its_suffixed_name() -> None:
    group = RequestGroup(
        suffix="1",
        resources={"VCPU": 2, "MEMORY_MB": 512},
        required=frozenset({"HW_X"}),
        forbidden=frozenset({"CUSTOM_SLOW"}),
        member_of=(("a", "b"),),
        not_member_of=frozenset({"c"}),
    )
    assert [(term, query, fail) for term, query, fail in probes(group)] == [
        ("resources1=MEMORY_MB:512", {"resources": "MEMORY_MB:512"}, False),
        ("resources1=VCPU:2", {"resources": "VCPU:2"}, False),
        ("required1=HW_X", {"required": "HW_X"}, False),
        ("required1=!CUSTOM_SLOW", {"required": "CUSTOM_SLOW"}, True),
        ("member_of1=in:a,b", {"member_of": "in:a,b"}, False),
        ("member_of1=!in:c", {"member_of": "in:c"}, True),
    ]
