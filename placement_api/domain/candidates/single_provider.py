"""The flat-cloud shortcut: candidates without options or a walk (pure, no I/O).

When the request is one unsuffixed group and every tree is a single
provider (a flat cloud), each provider with room for every class (and the
group's traits) is one candidate; the rows say so directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from placement_api.domain.candidates.combinations import (
    NO_TRAITS,
    Candidate,
    GroupPlan,
    Layouts,
)
from placement_api.domain.candidates.options import Trees


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
        held = provider_traits.get(provider, NO_TRAITS)
        # A loop, not all(): the generator would cost a third of the check.
        for any_of in plan.required:
            if not any_of & held:
                break
        else:
            chosen.append(provider)
            if stop_after is not None and len(chosen) >= stop_after:
                # Trees further on are never reached, whatever their providers.
                break
    if not chosen:
        return []
    layout = (
        Layouts([(plan.suffix, amounts) for amounts in plan.slots])
        .candidate((chosen[0],) * width)
        .layout
    )
    return [Candidate((provider,) * width, layout) for provider in chosen]
