"""The combination walk behind allocation candidates (pure, no database).

Providers and classes are plain ints here: classes VCPU=1, MEMORY=2, DISK=3, VF=4.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator, Sequence

import pytest

from placement_api.domain.candidates.combinations import Candidate, GroupPlan, SearchRules
from placement_api.domain.candidates.search import search_steps
from placement_api.domain.candidates.single_provider import single_provider_search

VCPU, MEMORY, DISK, VF = 1, 2, 3, 4


def search(
    plans: Sequence[GroupPlan],
    rules: SearchRules,
    anchors: Iterable[int],
    *,
    stop_after: int | None = None,
    shuffle: Callable[[list[int]], None] | None = None,
    seen: set[tuple[object, ...]] | None = None,
) -> list[Candidate]:
    """The search's candidates, all at once (the service takes them paced)."""
    steps = search_steps(plans, rules, anchors, stop_after=stop_after, shuffle=shuffle, seen=seen)
    return [candidate for candidate in steps if candidate is not None]


def granular(suffix: str, amounts: dict[int, int], options: dict[int, list[int]]) -> GroupPlan:
    return GroupPlan(
        suffix=suffix,
        granular=True,
        slots=(tuple(sorted(amounts.items())),),
        options={anchor: [providers] for anchor, providers in options.items()},
    )


def unsuffixed(
    amounts: dict[int, int],
    options: dict[int, dict[int, list[int]]],
    required: tuple[frozenset[int], ...] = (),
) -> GroupPlan:
    classes = sorted(amounts)
    return GroupPlan(
        suffix="",
        granular=False,
        slots=tuple(((c, amounts[c]),) for c in classes),
        options={a: [by_class[c] for c in classes] for a, by_class in options.items()},
        required=required,
    )


def allocations(found: Sequence[Candidate]) -> list[dict[int, dict[int, int]]]:
    return [candidate.allocations for candidate in found]


def test_unsuffixed_group_combines_providers_of_one_tree() -> None:
    # Tree 10: root 10 has VCPU, children 11 and 12 have VF.
    plan = unsuffixed({VCPU: 1, VF: 2}, {10: {VCPU: [10], VF: [11, 12]}})
    found = search([plan], SearchRules(), [10])
    assert allocations(found) == [{10: {VCPU: 1}, 11: {VF: 2}}, {10: {VCPU: 1}, 12: {VF: 2}}]
    assert found[0].mappings == {"": [10, 11]}


def test_slots_on_one_provider_merge_their_amounts() -> None:
    # NUMA children 11 and 12 both have VCPU and MEMORY.
    plan = unsuffixed({VCPU: 1, MEMORY: 2}, {10: {VCPU: [11, 12], MEMORY: [11, 12]}})
    found = search([plan], SearchRules(), [10])
    assert allocations(found) == [
        {11: {VCPU: 1, MEMORY: 2}},
        {11: {VCPU: 1}, 12: {MEMORY: 2}},
        {12: {VCPU: 1}, 11: {MEMORY: 2}},
        {12: {VCPU: 1, MEMORY: 2}},
    ]
    assert [c.mappings for c in found] == [{"": [11]}, {"": [11, 12]}, {"": [12, 11]}, {"": [12]}]


@pytest.mark.parametrize("width", [2, 3, 4])
def test_every_way_slots_share_providers_merges_their_amounts(width: int) -> None:
    classes = [VCPU, MEMORY, DISK, VF][:width]
    options = {c: [11, 12, 13, 14][:width] for c in classes}
    plan = unsuffixed({c: c * 10 for c in classes}, {10: options})
    found = search([plan], SearchRules(), [10])
    assert len(found) == width**width
    for candidate in found:
        expected: dict[int, dict[int, int]] = {}
        for class_id, provider in zip(classes, candidate.chosen, strict=True):
            expected.setdefault(provider, {})[class_id] = class_id * 10
        assert candidate.allocations == expected
        assert list(candidate.allocations) == list(expected)  # in the order slots name them
        assert candidate.mappings == {"": list(expected)}


def test_groups_on_one_provider_add_up_their_amounts() -> None:
    one = granular("1", {VCPU: 1}, {10: [10]})
    two = granular("2", {VCPU: 2, MEMORY: 1}, {10: [10]})
    (found,) = search([one, two], SearchRules(), [10])
    assert found.allocations == {10: {VCPU: 3, MEMORY: 1}}
    assert found.mappings == {"1": [10], "2": [10]}


def test_unconstrained_combinations_match_the_checked_walk() -> None:
    # Headroom on a provider no group can use: every combination is still
    # checked, one slot at a time, and must give the same candidates.
    plain = unsuffixed({VCPU: 1, DISK: 1}, {10: {VCPU: [10, 11], DISK: [11, 12]}})
    one = granular("1", {MEMORY: 1}, {10: [10, 12]})
    unchecked = search([plain, one], SearchRules(), [10])
    checked = search([plain, one], SearchRules(headroom={(99, VCPU): 1}), [10])
    assert len(unchecked) == 8
    assert unchecked == checked


def test_isolate_gives_each_granular_group_its_own_provider() -> None:
    one = granular("1", {VCPU: 1}, {10: [10, 11]})
    two = granular("2", {MEMORY: 1}, {10: [10, 11]})
    shared = search([one, two], SearchRules(), [10])
    isolated = search([one, two], SearchRules(isolate=True), [10])
    assert len(shared) == 4
    assert [c.mappings for c in isolated] == [{"1": [10], "2": [11]}, {"1": [11], "2": [10]}]


def test_isolate_does_not_constrain_the_unsuffixed_group() -> None:
    plain = unsuffixed({VCPU: 1}, {10: {VCPU: [10]}})
    one = granular("1", {MEMORY: 1}, {10: [10]})
    assert len(search([plain, one], SearchRules(isolate=True), [10])) == 1


def test_amounts_summed_across_groups_must_fit_headroom() -> None:
    # Two groups of 3 VGPU-like units; provider 10 has room for 4, provider 11 for 8.
    one = granular("1", {VCPU: 3}, {10: [10, 11]})
    two = granular("2", {VCPU: 3}, {10: [10, 11]})
    rules = SearchRules(headroom={(10, VCPU): 4, (11, VCPU): 8})
    found = search([one, two], rules, [10])
    assert {10: {VCPU: 6}} not in allocations(found)
    assert {11: {VCPU: 6}} in allocations(found)
    assert len(found) == 3


def test_unsuffixed_required_traits_are_met_by_its_providers_together() -> None:
    foo, bar = 100, 101
    plan = unsuffixed(
        {VCPU: 1, DISK: 1},
        {10: {VCPU: [10, 11], DISK: [12]}},
        required=(frozenset({foo}), frozenset({bar})),
    )
    rules = SearchRules(provider_traits={11: frozenset({foo}), 12: frozenset({bar})})
    assert allocations(search([plan], rules, [10])) == [{11: {VCPU: 1}, 12: {DISK: 1}}]


def test_same_subtree_needs_one_provider_above_the_others() -> None:
    # 1 (root) -> 2 (agent) -> 3, 4 (bridges); 1 -> 5 (other agent)
    parents = {1: None, 2: 1, 3: 2, 4: 2, 5: 1}
    agent = granular("agent", {VCPU: 1}, {1: [2, 5]})
    bridge = granular("bridge", {VF: 1}, {1: [3, 4]})
    rules = SearchRules(same_subtrees=(frozenset({"agent", "bridge"}),), parent_of=parents)
    found = search([agent, bridge], rules, [1])
    assert [c.mappings for c in found] == [
        {"agent": [2], "bridge": [3]},
        {"agent": [2], "bridge": [4]},
    ]


def test_resourceless_group_appears_only_in_mappings() -> None:
    parents = {1: None, 2: 1, 3: 2}
    marker = granular("nic", {}, {1: [2]})
    vf = granular("vf", {VF: 1}, {1: [3]})
    rules = SearchRules(same_subtrees=(frozenset({"nic", "vf"}),), parent_of=parents)
    (found,) = search([marker, vf], rules, [1])
    assert found.allocations == {3: {VF: 1}}
    assert found.mappings == {"nic": [2], "vf": [3]}


def test_before_nested_support_one_tree_gives_one_provider() -> None:
    plan = unsuffixed({VCPU: 1, VF: 1}, {10: {VCPU: [10], VF: [10, 11]}})
    rules = SearchRules(nested_aware=False, root_of={10: 10, 11: 10})
    assert allocations(search([plan], rules, [10])) == [{10: {VCPU: 1, VF: 1}}]


def test_a_candidate_reached_from_two_trees_is_returned_once() -> None:
    # Sharing provider 50 is the only DISK provider; trees 10 and 20 both reach it.
    plan = unsuffixed({DISK: 1}, {10: {DISK: [50]}, 20: {DISK: [50]}})
    rules = SearchRules(sharing=frozenset({50}))
    assert allocations(search([plan], rules, [10, 20])) == [{50: {DISK: 1}}]


def test_only_candidates_of_sharing_providers_alone_are_returned_once() -> None:
    # Sharing provider 50 has VCPU beside each tree's own, 60 the only DISK:
    # 50 with 60 is reached from both trees, each tree's own VCPU from one.
    plan = unsuffixed(
        {VCPU: 1, DISK: 1}, {10: {VCPU: [10, 50], DISK: [60]}, 20: {VCPU: [20, 50], DISK: [60]}}
    )
    rules = SearchRules(sharing=frozenset({50, 60}))
    assert allocations(search([plan], rules, [10, 20])) == [
        {10: {VCPU: 1}, 60: {DISK: 1}},
        {50: {VCPU: 1}, 60: {DISK: 1}},
        {20: {VCPU: 1}, 60: {DISK: 1}},
    ]
    assert len(search([plan], rules, [10, 20], stop_after=2)) == 2


def test_seen_carries_over_between_calls() -> None:
    plan = unsuffixed({DISK: 1}, {10: {DISK: [50]}, 20: {DISK: [50]}})
    rules = SearchRules(sharing=frozenset({50}))
    seen: set[tuple[object, ...]] = set()
    assert len(search([plan], rules, [10], seen=seen)) == 1
    assert search([plan], rules, [20], seen=seen) == []


def test_stop_after_stops_reading_anchors() -> None:
    consumed: list[int] = []

    def anchors() -> Iterator[int]:
        for anchor in range(1000):
            consumed.append(anchor)
            yield anchor

    plan = unsuffixed({VCPU: 1}, {a: {VCPU: [a]} for a in range(1000)})
    found = search([plan], SearchRules(), anchors(), stop_after=3)
    assert len(found) == 3
    assert consumed == [0, 1, 2]


def test_wide_tree_with_many_groups_only_builds_what_is_asked() -> None:
    # One host, 8 equal children with one unit each, 8 single-unit groups:
    # 8**8 products, of which 8! fit. Asking for 5 builds 5.
    children = list(range(2, 10))
    plans = [granular(str(i), {VF: 1}, {1: children}) for i in range(1, 9)]
    headroom = {(child, VF): 1 for child in children}
    first = search(plans, SearchRules(headroom=headroom), [1], stop_after=5)
    assert len(first) == 5
    every = search(plans, SearchRules(headroom=headroom), [1])
    assert len(every) == 40320  # 8!, each a distinct mapping of groups to children
    assert all(len(c.allocations) == 8 for c in every)


def test_unconstrained_wide_tree_only_builds_what_is_asked() -> None:
    # 8 groups over 8 children with nothing to check: 8**8 combinations, 5 built.
    children = list(range(2, 10))
    plans = [granular(str(i), {VF: 1}, {1: children}) for i in range(1, 9)]
    found = search(plans, SearchRules(), [1], stop_after=5)
    assert [c.mappings["8"] for c in found] == [[2], [3], [4], [5], [6]]


def test_resourceless_group_on_a_provider_of_its_own_is_not_allocated() -> None:
    marker = granular("nic", {}, {1: [2]})
    vf = granular("vf", {VF: 1}, {1: [2, 3]})
    found = search([marker, vf], SearchRules(), [1])
    assert allocations(found) == [{2: {VF: 1}}, {3: {VF: 1}}]
    assert [c.mappings for c in found] == [{"nic": [2], "vf": [2]}, {"nic": [2], "vf": [3]}]


def test_shuffle_reorders_each_slot() -> None:
    plan = granular("1", {VCPU: 1}, {10: [10, 11, 12]})
    found = search([plan], SearchRules(), [10], shuffle=lambda items: items.reverse())
    assert [c.mappings["1"] for c in found] == [[12], [11], [10]]


def test_no_candidates_when_stop_after_is_zero() -> None:
    plan = granular("1", {VCPU: 1}, {10: [10]})
    assert search([plan], SearchRules(), [10], stop_after=0) == []


def _flat_rows(seed: int) -> tuple[list[tuple[int, int, int]], dict[int, frozenset[int]]]:
    """(provider, root, class) rows of single-provider trees, by root, each
    provider with room for a random subset of the classes; and random traits."""
    rng = random.Random(seed)
    rows: list[tuple[int, int, int]] = []
    traits: dict[int, frozenset[int]] = {}
    for provider in sorted(rng.sample(range(1, 400), 60)):
        for class_id in (VCPU, MEMORY, DISK):
            if rng.random() < 0.8:
                rows.append((provider, provider, class_id))
        traits[provider] = frozenset(t for t in (100, 101, 102) if rng.random() < 0.5)
    return rows, traits


@pytest.mark.parametrize("seed", range(12))
def test_single_provider_trees_are_found_as_the_walk_finds_them(seed: int) -> None:
    """Without options or a walk, the same candidates, in the same order."""
    rng = random.Random(seed)
    rows, traits = _flat_rows(seed)
    amounts = {VCPU: 2, MEMORY: 512, DISK: 10}
    required = rng.choice([(), (frozenset({100}),), (frozenset({100, 101}), frozenset({102}))])
    by_tree: dict[int, dict[int, list[int]]] = {}
    for provider, root, class_id in rows:
        by_tree.setdefault(root, {c: [] for c in amounts})[class_id].append(provider)
    complete = {root: classes for root, classes in by_tree.items() if all(classes.values())}
    plan = unsuffixed(amounts, complete, required)
    window = range(rng.randrange(0, 200), 400) if seed % 2 else None
    stop_after = rng.choice([None, 1, 7, 25])
    anchors = sorted(a for a in complete if window is None or a in window)
    walked = search([plan], SearchRules(provider_traits=traits), anchors, stop_after=stop_after)
    found = single_provider_search(plan, rows, traits, window, stop_after=stop_after)
    assert found == walked
    assert walked or window is not None


def test_a_tree_of_several_providers_needs_the_walk() -> None:
    rows = [(10, 10, VCPU), (11, 10, MEMORY)]
    plan = unsuffixed({VCPU: 1, MEMORY: 1}, {10: {VCPU: [10], MEMORY: [11]}})
    assert single_provider_search(plan, rows, {}) is None


def test_single_provider_trees_none_wanted() -> None:
    plan = unsuffixed({VCPU: 1}, {10: {VCPU: [10]}})
    assert single_provider_search(plan, [(10, 10, VCPU)], {}, stop_after=0) == []
