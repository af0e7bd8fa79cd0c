"""What a page of change-feed entries means for the host cache (entries as
docs/changes.md describes them)."""

from __future__ import annotations

from scheduler.placement.feed_effects import ProviderFacts, effects_of

RP, OTHER, CONSUMER = "rp-1", "rp-2", "consumer-1"


def test_allocations_give_every_touched_providers_usage_the_last_entry_winning() -> None:
    effects = effects_of([
        {"index": 7, "resource": "allocation", "action": "created", "uuid": CONSUMER,
         "usages": {RP: {"VCPU": 2, "MEMORY_MB": 512}}},
        {"index": 8, "resource": "allocation", "action": "deleted", "uuid": "consumer-2",
         "usages": {RP: {"VCPU": 1}, OTHER: {"VCPU": 0}}},
    ])  # fmt: skip
    assert effects.index == 8
    assert effects.used == {RP: {"VCPU": 1, "MEMORY_MB": 512}, OTHER: {"VCPU": 0}}
    assert effects.consumers == [CONSUMER, "consumer-2"]
    assert not effects.structural


def test_inventory_is_a_whole_inventory_of_capacities_as_placement_shows_them() -> None:
    inventories = {
        "VCPU": {"total": 10, "reserved": 1, "allocation_ratio": 1.5, "min_unit": 1,
                 "max_unit": 10, "step_size": 1},
        "DISK_GB": {"total": 100, "reserved": 0, "allocation_ratio": 1.0, "min_unit": 1,
                    "max_unit": 100, "step_size": 1},
    }  # fmt: skip
    effects = effects_of(
        [{"index": 1, "resource": "inventory", "action": "updated", "uuid": RP,
          "inventories": inventories}]
    )  # fmt: skip
    assert effects.capacity == {RP: {"VCPU": 13, "DISK_GB": 100}}
    assert effects.structural


def test_provider_changes_reshape_but_a_new_provider_does_not_yet() -> None:
    created = {"index": 1, "resource": "resource_provider", "action": "created", "uuid": RP,
               "name": "new", "parent_uuid": None, "root_uuid": RP}  # fmt: skip
    effects = effects_of([created])
    assert effects.providers == {RP: ProviderFacts("new", None, RP)}
    assert not effects.structural
    renamed = created | {"index": 2, "action": "updated", "name": "renamed"}
    deleted = created | {"index": 3, "uuid": OTHER, "action": "deleted"}
    effects = effects_of([renamed, deleted])
    assert effects.reshaped == {RP, OTHER}
    assert effects.providers == {RP: ProviderFacts("renamed", None, RP), OTHER: None}


def test_traits_and_aggregates_of_a_provider_reshape_the_catalogue_does_not() -> None:
    effects = effects_of([
        {"index": 1, "resource": "trait", "action": "created", "uuid": "CUSTOM_X",
         "name": "CUSTOM_X"},
        {"index": 2, "resource": "resource_class", "action": "created", "uuid": "CUSTOM_Y",
         "name": "CUSTOM_Y"},
    ])  # fmt: skip
    assert not effects.structural
    effects = effects_of([
        {"index": 3, "resource": "trait", "action": "updated", "uuid": RP, "generation": 2,
         "traits": ["HW_CPU_X86_AVX"]},
        {"index": 4, "resource": "aggregate", "action": "updated", "uuid": OTHER,
         "generation": 5, "aggregates": ["agg-1"]},
    ])  # fmt: skip
    assert effects.reshaped == {RP, OTHER}
    assert effects.aggregates == {OTHER: frozenset({"agg-1"})}
