"""Resolve the names a candidate request uses into the database ids the
prelude read.

Unknown resource classes and traits are 400s, reported in upstream's order
(root_required first, then group by group: classes, required, forbidden).
Unknown aggregates and ``in_tree`` providers are not errors: they make the
request unsatisfiable, so the answer is an empty list.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from placement_api import errors
from placement_api.domain.candidates.request import CandidateRequest, RequestGroup


@dataclass
class KnownIds:
    """Ids by name (by uuid for aggregates and trees; a tree is its root's id)."""

    classes: dict[str, int] = field(default_factory=dict)
    traits: dict[str, int] = field(default_factory=dict)
    aggregates: dict[str, int] = field(default_factory=dict)
    trees: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ResolvedGroup:
    """A request group in ids. Empty ``member_of`` means "not filtered"."""

    suffix: str
    granular: bool
    amounts: dict[int, int]
    required: tuple[frozenset[int], ...]
    forbidden: frozenset[int]
    member_of: tuple[frozenset[int], ...]
    forbidden_aggregates: frozenset[int]
    tree_root: int | None

    @property
    def criteria(self) -> tuple[object, ...]:
        """Everything but the suffix: groups of the same criteria match the same rows."""
        return (
            self.granular,
            tuple(sorted(self.amounts.items())),
            self.required,
            self.forbidden,
            self.member_of,
            self.forbidden_aggregates,
            self.tree_root,
        )


@dataclass(frozen=True)
class ResolvedRequest:
    groups: tuple[ResolvedGroup, ...]
    root_required: frozenset[int]
    root_forbidden: frozenset[int]
    class_names: dict[int, str]


def _check_traits(found: dict[str, int], wanted: Iterable[str]) -> None:
    missing = sorted(set(wanted) - found.keys())
    if missing:
        raise errors.BadRequest(f"No such trait(s): {', '.join(missing)}.")


def _check_group_names(
    group: RequestGroup, classes: dict[str, int], traits: dict[str, int]
) -> None:
    missing = [name for name in group.resources if name not in classes]
    if missing:
        raise errors.BadRequest(
            f"Invalid resource class in resources parameter: No such resource class {missing[0]}."
        )
    for any_of in group.required.any_of:
        _check_traits(traits, any_of)
    _check_traits(traits, group.required.forbidden)


def _resolve_group(
    group: RequestGroup,
    classes: dict[str, int],
    traits: dict[str, int],
    aggregates: dict[str, int],
    trees: dict[str, int],
) -> ResolvedGroup | None:
    """The group in ids, or None when an unknown aggregate or tree rules it out."""
    member_of = tuple(
        frozenset(aggregates[uuid] for uuid in any_of if uuid in aggregates)
        for any_of in group.member_of.any_of
    )
    if not all(member_of) or (group.in_tree is not None and group.in_tree not in trees):
        return None
    return ResolvedGroup(
        suffix=group.suffix,
        granular=group.granular,
        amounts={classes[name]: amount for name, amount in group.resources.items()},
        required=tuple(frozenset(traits[n] for n in any_of) for any_of in group.required.any_of),
        forbidden=frozenset(traits[name] for name in group.required.forbidden),
        member_of=member_of,
        forbidden_aggregates=frozenset(
            aggregates[uuid] for uuid in group.member_of.forbidden if uuid in aggregates
        ),
        tree_root=trees[group.in_tree] if group.in_tree is not None else None,
    )


def resolve(request: CandidateRequest, ids: KnownIds) -> ResolvedRequest | None:
    """The request in ids; None when it cannot match anything."""
    classes, traits = ids.classes, ids.traits
    _check_traits(traits, request.root_required)
    _check_traits(traits, request.root_forbidden)
    for group in request.groups:
        _check_group_names(group, classes, traits)
    groups = [_resolve_group(g, classes, traits, ids.aggregates, ids.trees) for g in request.groups]
    if any(group is None for group in groups):
        return None
    return ResolvedRequest(
        groups=tuple(group for group in groups if group is not None),
        root_required=frozenset(traits[name] for name in request.root_required),
        root_forbidden=frozenset(traits[name] for name in request.root_forbidden),
        class_names={ident: name for name, ident in classes.items()},
    )
