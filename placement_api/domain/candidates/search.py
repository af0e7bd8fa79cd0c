"""Walk the combinations of providers, one tree at a time (pure, no I/O).

For each anchor tree, a depth-first walk picks one provider per slot (see
``options``). Every rule is checked as soon as the slot that can break it is
filled, so a branch that cannot lead to a valid candidate is abandoned
before its combinations are built:

- capacity: a class asked for by several groups is summed per provider and
  kept within the provider's free capacity and ``max_unit``;
- ``group_policy=isolate``: granular groups use distinct providers;
- before 1.29, one candidate uses at most one provider per tree;
- the unsuffixed group's required traits, on the union of its providers'
  traits, when its last slot is filled;
- ``same_subtree``: when the last group of the set is filled, one of its
  providers is an ancestor (or itself) of all the others.

When a request has none of these rules to check, every combination is a
candidate and the walk is a plain product of the slots' providers. When
the request is one unsuffixed group and every tree is a single provider
(a flat cloud), each provider with room for every class (and the group's
traits) is one candidate, and no options or walk are needed.

The walk is a generator, so the caller stops it after ``limit`` candidates
and nothing beyond them is ever enumerated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import NamedTuple

from placement_api.domain.candidates.options import Trees

Amounts = tuple[tuple[int, int], ...]
# One provider per slot, in slot order.
Combination = tuple[int, ...]
_NO_TRAITS: frozenset[int] = frozenset()


@dataclass(frozen=True)
class GroupPlan:
    suffix: str
    granular: bool
    # Per slot, the (class id, amount) pairs its provider supplies.
    slots: tuple[Amounts, ...]
    # Anchor -> one list per slot of the providers that may fill it.
    options: Mapping[int, Sequence[Sequence[int]]]
    # Unsuffixed group: trait-id sets its providers must cover between them.
    required: tuple[frozenset[int], ...] = ()


@dataclass(frozen=True)
class SearchRules:
    isolate: bool = False
    same_subtrees: tuple[frozenset[str], ...] = ()
    nested_aware: bool = True
    # (provider, class) -> most a candidate may take; only for classes that
    # more than one group asks for (one group alone is checked in SQL).
    headroom: Mapping[tuple[int, int], int] = field(default_factory=dict)
    provider_traits: Mapping[int, frozenset[int]] = field(default_factory=dict)
    root_of: Mapping[int, int] = field(default_factory=dict)
    parent_of: Mapping[int, int | None] = field(default_factory=dict)
    # Sharing providers: the ones that serve more than their own tree.
    sharing: frozenset[int] = frozenset()


class Layout(NamedTuple):
    """How a shape of combination (which slots share a provider) becomes a
    candidate; shared by every combination of that shape."""

    # Per provider allocated: the first slot it fills, and its amounts
    # (class id -> amount) merged over its slots. Read only.
    held: tuple[tuple[int, dict[int, int]], ...]
    # Per group suffix: the slots of its distinct providers.
    mapped: tuple[tuple[str, tuple[int, ...]], ...]


class Candidate(NamedTuple):
    """One way to meet the request: a provider per slot, and the layout that
    turns them into allocations and mappings. Searches find tens of
    thousands, so they are kept in this form and rendered once, at the end."""

    chosen: Combination
    layout: Layout

    @property
    def allocations(self) -> dict[int, dict[int, int]]:
        return {self.chosen[index]: amounts for index, amounts in self.layout.held}

    @property
    def mappings(self) -> dict[str, list[int]]:
        chosen = self.chosen
        return {suffix: [chosen[i] for i in slots] for suffix, slots in self.layout.mapped}

    def providers(self) -> Iterator[int]:
        """The providers allocated from."""
        chosen = self.chosen
        return (chosen[index] for index, _ in self.layout.held)

    def key(self) -> tuple[object, ...]:
        resources = sorted(
            (provider, class_id, amount)
            for provider, amounts in self.allocations.items()
            for class_id, amount in amounts.items()
        )
        mappings = sorted((suffix, tuple(sorted(ps))) for suffix, ps in self.mappings.items())
        return (tuple(resources), tuple(mappings))


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


class _Shapes:
    """The layout of each shape of combination, worked out once per shape."""

    def __init__(self, slots: Sequence[tuple[str, Amounts]]) -> None:
        """``slots``: per slot, its group's suffix and its amounts."""
        self.amounts = [amounts for _, amounts in slots]
        spans: dict[str, list[int]] = {}
        for index, (suffix, _) in enumerate(slots):
            spans.setdefault(suffix, []).append(index)
        self.groups = list(spans.items())
        self.built: dict[Combination, Layout] = {}

    def candidate(self, chosen: Combination) -> Candidate:
        # Per slot, the first slot with the same provider.
        shape = tuple(map(chosen.index, chosen))
        layout = self.built.get(shape)
        if layout is None:
            layout = self.built[shape] = self._layout(shape)
        return Candidate(chosen, layout)

    def _layout(self, shape: Combination) -> Layout:
        merged: dict[int, tuple[int, dict[int, int]]] = {}
        for index, (first, amounts) in enumerate(zip(shape, self.amounts, strict=True)):
            if not amounts:
                continue
            if first not in merged:
                merged[first] = (index, {})
            held = merged[first][1]
            for class_id, amount in amounts:
                held[class_id] = held.get(class_id, 0) + amount
        mapped = tuple(
            (suffix, tuple(dict.fromkeys(shape[i] for i in indexes)))
            for suffix, indexes in self.groups
        )
        return Layout(tuple(merged.values()), mapped)


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

    def combinations(self, anchor: int) -> Iterable[Combination]:
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

    def _walk(self, choices: list[Sequence[int]]) -> Iterator[Combination]:
        """Depth-first over the slots, with an explicit stack of option positions.

        A level whose position is past zero holds the provider it last took.
        """
        slots, chosen = self.slots, self.chosen
        last = len(slots) - 1
        next_option = [0] * len(slots)
        level = 0
        while level >= 0:
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
        traits = held.get(chosen[slots[0]], _NO_TRAITS)
        # Most often one of the providers (on flat trees, the only one) has them all.
        for any_of in slot.required:
            if not any_of & traits:
                break
        else:
            return True
        union = set(traits).union(*(held.get(chosen[index], _NO_TRAITS) for index in slots))
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


def search(
    plans: Sequence[GroupPlan],
    rules: SearchRules,
    anchors: Iterable[int],
    *,
    stop_after: int | None = None,
    shuffle: Callable[[list[int]], None] | None = None,
    seen: set[tuple[object, ...]] | None = None,
) -> list[Candidate]:
    """Distinct candidates, anchor by anchor, until ``stop_after`` are found.

    Every plan must have options for every anchor given. ``shuffle``, when
    given, reorders each slot's providers (the caller shuffles the anchors).
    ``seen`` carries the keys of candidates already found by earlier calls.
    """
    if stop_after is not None and stop_after <= 0:
        return []
    walk = _Walk(plans, rules, shuffle)
    build = _Shapes([(slot.suffix, slot.amounts) for slot in walk.slots]).candidate
    found: list[Candidate] = []
    seen = set() if seen is None else seen
    sharing = rules.sharing
    for anchor in anchors:
        for chosen in walk.combinations(anchor):
            candidate = build(chosen)
            # Only a candidate made of sharing providers alone can be reached
            # from several trees; any other belongs to its anchor's tree, so
            # only those whose resources all come from sharing providers (a
            # cheap superset of them) need their key checked.
            if sharing and all(provider in sharing for provider in candidate.providers()):
                key = candidate.key()
                if key in seen:
                    continue
                seen.add(key)
            found.append(candidate)
            if stop_after is not None and len(found) >= stop_after:
                return found
    return found


def single_provider_search(
    plan: GroupPlan,
    rows: Iterable[tuple[int, int, int]],
    provider_traits: Mapping[int, frozenset[int]],
    within: Trees | None = None,
    *,
    stop_after: int | None = None,
) -> list[Candidate] | None:
    """Candidates of a request that is one unsuffixed group (``plan``, with
    no options yet) over trees of a single provider each, with no sharing
    providers: in the order of ``rows`` ((provider, root, class) by root),
    each provider of a tree ``within`` that has a row for every slot and
    the group's required traits. None when some row's provider is not its
    tree's root: the general search is needed."""
    if stop_after is not None and stop_after <= 0:
        return []
    chosen: list[int] = []
    width = len(plan.slots)
    last, run = None, 0
    for provider, root, _ in rows:
        if provider != root:
            return None
        run = run + 1 if provider == last else 1
        last = provider
        if run < width or (within is not None and provider not in within):
            continue
        held = provider_traits.get(provider, _NO_TRAITS)
        # A loop, not all(): the generator would cost a third of the check.
        for any_of in plan.required:
            if not any_of & held:
                break
        else:
            chosen.append(provider)
            if stop_after is not None and len(chosen) >= stop_after:
                # Trees further on are never reached, whatever their shape.
                break
    if not chosen:
        return []
    layout = (
        _Shapes([(plan.suffix, amounts) for amounts in plan.slots])
        .candidate((chosen[0],) * width)
        .layout
    )
    return [Candidate((provider,) * width, layout) for provider in chosen]
