"""Walk the combinations of providers, one tree at a time (pure, no I/O):
a depth-first generator that checks every rule as soon as the slot that can
break it is filled, so no doomed branch and nothing beyond ``limit`` is ever
built. The rules: docs/candidates.md.

The walk also yields ``None`` now and then (after each anchor, and every
``TICK_STEPS`` steps that found nothing): a point where its caller may let
other work run, however long the walk goes without a candidate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import product

from placement_api.domain.candidates.combinations import (
    NO_TRAITS,
    Amounts,
    Candidate,
    Combination,
    GroupPlan,
    Layouts,
    SearchRules,
)

# Steps of the walk (options tried) between two ticks.
TICK_STEPS = 4096


@dataclass(frozen=True)
class _Slot:
    suffix: str
    amounts: Amounts
    # The amounts of classes several groups ask for, summed against headroom.
    tracked: Amounts
    # Set on a group's last slot: the traits its providers must cover together.
    required: tuple[frozenset[int], ...]
    closes_subtrees: tuple[frozenset[str], ...]
    # Filling this slot completes a rule to check (traits, same_subtree).
    closes: bool
    # A granular slot under group_policy=isolate: its provider serves no other.
    isolated: bool
    # Taking a provider here must be checked (and undone) against the others.
    held: bool


def _slots(plans: Sequence[GroupPlan], rules: SearchRules) -> list[_Slot]:
    last_slot: dict[str, int] = {}
    count = 0
    for plan in plans:
        count += len(plan.slots)
        last_slot[plan.suffix] = count - 1
    closing: dict[int, list[frozenset[str]]] = {}
    for subtree in rules.same_subtrees:
        closing.setdefault(max(last_slot[s] for s in subtree), []).append(subtree)
    tracked_classes = {class_id for _, class_id in rules.headroom}
    slots: list[_Slot] = []
    for plan in plans:
        for position, amounts in enumerate(plan.slots):
            last = position == len(plan.slots) - 1
            tracked = tuple((c, a) for c, a in amounts if c in tracked_classes)
            isolated = plan.granular and rules.isolate
            slots.append(
                _Slot(
                    suffix=plan.suffix,
                    amounts=amounts,
                    tracked=tracked,
                    required=plan.required if last else (),
                    closes_subtrees=tuple(closing.get(len(slots), ())),
                    closes=bool(last and plan.required) or len(slots) in closing,
                    isolated=isolated,
                    held=bool(tracked) or isolated or not rules.nested_aware,
                )
            )
    return slots


class _Walk:
    """The state of one depth-first walk; ``_take``/``_release`` keep it exact."""

    def __init__(
        self,
        plans: Sequence[GroupPlan],
        rules: SearchRules,
        shuffle: Callable[[list[int]], None] | None,
    ) -> None:
        self.rules = rules
        self.shuffle = shuffle
        self.plan_options = [plan.options for plan in plans]
        self.slots = _slots(plans, rules)
        # The slots with something to check, by level; with none, every
        # combination is a candidate.
        self.checked = [(i, slot) for i, slot in enumerate(self.slots) if slot.held or slot.closes]
        # Only required traits to check: no walk state to keep.
        self.required_slots = [slot for _, slot in self.checked if slot.required]
        self.traits_only = all(
            not slot.held and not slot.closes_subtrees for _, slot in self.checked
        )
        self.chosen = [0] * len(self.slots)
        self.usage: dict[tuple[int, int], int] = {}
        self.granular_holders: dict[int, int] = {}
        self.root_holders: dict[int, tuple[int, int]] = {}
        self.group_slots: dict[str, list[int]] = {}
        for index, slot in enumerate(self.slots):
            self.group_slots.setdefault(slot.suffix, []).append(index)
        self.ancestors: dict[int, frozenset[int]] = {}

    def combinations(self, anchor: int) -> Iterable[Combination | None]:
        choices: list[Sequence[int]]
        if len(self.plan_options) == 1:
            choices = list(self.plan_options[0][anchor])
        else:
            choices = [providers for options in self.plan_options for providers in options[anchor]]
        if self.shuffle is not None:
            for index, providers in enumerate(choices):
                reordered = list(providers)
                self.shuffle(reordered)
                choices[index] = reordered
        if not self.checked:
            return product(*choices)
        if max(map(len, choices)) == 1:
            if self.traits_only:
                chosen = tuple([providers[0] for providers in choices])
                return (chosen,) if self._has_required(chosen) else ()
            return self._only_choice(choices)
        return self._walk(choices)

    def _walk(self, choices: list[Sequence[int]]) -> Iterator[Combination | None]:
        """Depth-first over the slots, with an explicit stack of option positions.

        A level whose position is past zero holds the provider it last took.
        Every ``TICK_STEPS`` steps it yields None (a tick).
        """
        slots, chosen = self.slots, self.chosen
        last = len(slots) - 1
        next_option = [0] * len(slots)
        level = 0
        steps = 0
        while level >= 0:
            steps += 1
            if steps == TICK_STEPS:
                steps = 0
                yield None
            slot, options, position = slots[level], choices[level], next_option[level]
            if position and slot.held:
                self._release(slot, chosen[level])
            while position < len(options):
                provider = options[position]
                position += 1
                if slot.held and not self._take(slot, provider):
                    continue
                chosen[level] = provider
                if not slot.closes or self._closing_rules_hold(slot):
                    break
                if slot.held:
                    self._release(slot, provider)
            else:
                next_option[level] = 0
                level -= 1
                continue
            next_option[level] = position
            if level == last:
                yield tuple(chosen)
            else:
                level += 1

    def _only_choice(self, choices: list[Sequence[int]]) -> list[Combination]:
        """The common case of one provider per slot (flat trees): one
        combination to check, so nothing stays held after the check."""
        chosen = self.chosen
        chosen[:] = [providers[0] for providers in choices]
        taken: list[int] = []
        fits = True
        for level, slot in self.checked:
            if slot.held:
                if not self._take(slot, chosen[level]):
                    fits = False
                    break
                taken.append(level)
            if slot.closes and not self._closing_rules_hold(slot):
                fits = False
                break
        for level in taken:
            self._release(self.slots[level], chosen[level])
        return [tuple(chosen)] if fits else []

    def _take(self, slot: _Slot, provider: int) -> bool:
        rules = self.rules
        if slot.isolated and provider in self.granular_holders:
            return False
        if not rules.nested_aware:
            holder = self.root_holders.get(rules.root_of.get(provider, provider))
            if holder is not None and holder[0] != provider:
                return False
        if slot.tracked:
            usage = self.usage
            for class_id, amount in slot.tracked:
                limit = rules.headroom.get((provider, class_id))
                if limit is not None and usage.get((provider, class_id), 0) + amount > limit:
                    return False
            for class_id, amount in slot.tracked:
                usage[(provider, class_id)] = usage.get((provider, class_id), 0) + amount
        if slot.isolated:
            self.granular_holders[provider] = self.granular_holders.get(provider, 0) + 1
        if not rules.nested_aware:
            root = rules.root_of.get(provider, provider)
            count = self.root_holders.get(root, (provider, 0))[1]
            self.root_holders[root] = (provider, count + 1)
        return True

    def _release(self, slot: _Slot, provider: int) -> None:
        for class_id, amount in slot.tracked:
            self.usage[(provider, class_id)] -= amount
        if slot.isolated:
            _decrement(self.granular_holders, provider)
        if not self.rules.nested_aware:
            root = self.rules.root_of.get(provider, provider)
            count = self.root_holders[root][1]
            if count == 1:
                del self.root_holders[root]
            else:
                self.root_holders[root] = (provider, count - 1)

    def _closing_rules_hold(self, slot: _Slot) -> bool:
        if slot.required and not self._group_has_required(slot, self.chosen):
            return False
        return all(self._in_one_subtree(subtree) for subtree in slot.closes_subtrees)

    def _has_required(self, chosen: Sequence[int]) -> bool:
        """Whether every group's providers have its required traits between them."""
        # A loop, not all(): the generator would cost a third of the check.
        for slot in self.required_slots:  # noqa: SIM110
            if not self._group_has_required(slot, chosen):
                return False
        return True

    def _group_has_required(self, slot: _Slot, chosen: Sequence[int]) -> bool:
        held = self.rules.provider_traits
        slots = self.group_slots[slot.suffix]
        traits = held.get(chosen[slots[0]], NO_TRAITS)
        # Most often one of the providers (on flat trees, the only one) has them all.
        for any_of in slot.required:
            if not any_of & traits:
                break
        else:
            return True
        union = set(traits).union(*(held.get(chosen[index], NO_TRAITS) for index in slots))
        return all(any_of & union for any_of in slot.required)

    def _in_one_subtree(self, suffixes: frozenset[str]) -> bool:
        providers = {self.chosen[i] for s in suffixes for i in self.group_slots[s]}
        if len(providers) == 1:
            return True
        common = frozenset.intersection(*(self._ancestry(p) for p in providers))
        return bool(common & providers)

    def _ancestry(self, provider: int) -> frozenset[int]:
        """The provider and all its ancestors."""
        found = self.ancestors.get(provider)
        if found is None:
            chain = [provider]
            parent = self.rules.parent_of.get(provider)
            while parent is not None:
                chain.append(parent)
                parent = self.rules.parent_of.get(parent)
            found = self.ancestors[provider] = frozenset(chain)
        return found


def _decrement(counts: dict[int, int], key: int) -> None:
    if counts[key] == 1:
        del counts[key]
    else:
        counts[key] -= 1


def search_steps(
    plans: Sequence[GroupPlan],
    rules: SearchRules,
    anchors: Iterable[int],
    *,
    stop_after: int | None = None,
    shuffle: Callable[[list[int]], None] | None = None,
    seen: set[tuple[object, ...]] | None = None,
) -> Iterator[Candidate | None]:
    """Distinct candidates, anchor by anchor, until ``stop_after`` are found,
    with ticks (None) between them.

    Every plan must have options for every anchor given. ``shuffle``, when
    given, reorders each slot's providers (the caller shuffles the anchors).
    ``seen`` carries the keys of candidates already found by earlier calls.
    """
    if stop_after is not None and stop_after <= 0:
        return
    walk = _Walk(plans, rules, shuffle)
    build = Layouts([(slot.suffix, slot.amounts) for slot in walk.slots]).candidate
    found = 0
    seen = set() if seen is None else seen
    sharing = rules.sharing
    for anchor in anchors:
        for chosen in walk.combinations(anchor):
            if chosen is None:
                yield None
                continue
            candidate = build(chosen)
            # Only a candidate made of sharing providers alone can be reached
            # from several trees (only sharing providers are in the options of
            # trees not their own): any other belongs to its anchor's tree.
            if sharing and sharing.issuperset(chosen):
                key = candidate.key()
                if key in seen:
                    continue
                seen.add(key)
            yield candidate
            found += 1
            if stop_after is not None and found >= stop_after:
                return
        yield None
