"""Which trees each provider can serve (pure, no database).

Trees are named by their root id. Sharing provider 50 is its own root and
serves trees 10 and 20 through an aggregate.
"""

from __future__ import annotations

from placement_api.domain.candidates.options import (
    SharingMap,
    TreeRule,
    granular_options,
    unsuffixed_options,
)

VCPU, DISK = 1, 3
AGG = 7
TRAIT = 70
SHARING = SharingMap(
    providers=frozenset({50}),
    anchors={50: frozenset({10, 20, 50})},
    aggregates={50: frozenset({AGG})},
)


def test_a_provider_serves_its_own_tree() -> None:
    assert granular_options([(11, 10), (12, 10), (21, 20)], SharingMap(), TreeRule()) == {
        10: [[11, 12]],
        20: [[21]],
    }


def test_a_sharing_provider_serves_every_tree_of_its_aggregates() -> None:
    options = granular_options([(50, 50)], SHARING, TreeRule())
    assert options == {10: [[50]], 20: [[50]], 50: [[50]]}


def test_tree_rules_limit_the_trees_a_sharing_provider_serves() -> None:
    rule = TreeRule(root_required=frozenset({TRAIT}), root_traits={20: frozenset({TRAIT})})
    assert granular_options([(50, 50)], SHARING, rule) == {20: [[50]]}
    banned = TreeRule(banned=frozenset({10}))
    assert set(granular_options([(50, 50)], SHARING, banned)) == {20, 50}


def test_unsuffixed_keeps_only_trees_with_every_class() -> None:
    rows = [(10, 10, VCPU), (21, 20, VCPU), (50, 50, DISK)]
    options = unsuffixed_options(rows, [VCPU, DISK], SHARING, TreeRule())
    assert options == {10: [[10], [50]], 20: [[21], [50]]}


def test_unsuffixed_sharing_needs_its_own_membership_for_member_of() -> None:
    rows = [(10, 10, VCPU), (50, 50, DISK)]
    elsewhere = (frozenset({AGG + 1}),)
    assert unsuffixed_options(rows, [VCPU, DISK], SHARING, TreeRule(), member_of=elsewhere) == {}
    inside = (frozenset({AGG}),)
    assert unsuffixed_options(rows, [VCPU, DISK], SHARING, TreeRule(), member_of=inside) == {
        10: [[10], [50]]
    }


def test_unsuffixed_in_tree_uses_no_sharing_provider_of_another_tree() -> None:
    rows = [(10, 10, VCPU), (50, 50, DISK)]
    assert unsuffixed_options(rows, [VCPU, DISK], SHARING, TreeRule(), in_tree=True) == {}


def test_a_sharing_provider_joins_a_tree_s_list_in_provider_order() -> None:
    low = SharingMap(providers=frozenset({5}), anchors={5: frozenset({5, 10})})
    rows = [(10, 10, VCPU), (11, 10, DISK), (12, 10, DISK), (5, 5, DISK)]
    assert unsuffixed_options(rows, [VCPU, DISK], low, TreeRule()) == {10: [[10], [5, 11, 12]]}
    assert granular_options([(11, 10), (5, 5)], low, TreeRule()) == {5: [[5]], 10: [[5, 11]]}


def test_unsuffixed_trees_served_by_sharing_providers_alone() -> None:
    assert unsuffixed_options([(50, 50, DISK)], [DISK], SHARING, TreeRule()) == {
        10: [[50]],
        20: [[50]],
        50: [[50]],
    }


def test_within_limits_the_trees_sharing_providers_serve() -> None:
    rows = [(11, 10, DISK), (21, 20, DISK), (50, 50, DISK)]
    assert granular_options([(11, 10), (50, 50)], SHARING, TreeRule(), within={10}) == {
        10: [[11, 50]]
    }
    assert unsuffixed_options(rows, [DISK], SHARING, TreeRule(), within={10}) == {
        10: [[11, 50]],
        20: [[21]],
    }
