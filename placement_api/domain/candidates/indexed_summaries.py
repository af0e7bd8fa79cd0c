"""Provider summaries from the worker's provider index (pure, no I/O), as
the database path builds them (``summaries``): in provider id order,
resources by class id, traits by trait id, the parent's and root's uuids."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from placement_api.domain.candidates.provider_index import ProviderIndex
from placement_api.domain.candidates.search_settings import SearchSettings
from placement_api.domain.candidates.summaries import NO_TRAITS, ProviderSummary


def summaries_of(
    index: ProviderIndex,
    ids: Iterable[int],
    settings: SearchSettings,
    classes: Collection[int],
) -> dict[int, ProviderSummary] | None:
    """The summaries of ``ids`` (in id order), showing ``classes`` only
    unless the microversion shows all; None when a provider, its parent or
    its root is missing from the index (the database must answer)."""
    newest = settings.all_classes and settings.with_traits
    names, providers = index.names, index.providers
    shown_classes = sorted(classes)
    found: dict[int, ProviderSummary] = {}
    for ident in sorted(ids):
        provider = providers.get(ident)
        if provider is None:
            return None
        if newest and provider.summary is not None:
            found[ident] = provider.summary
            continue
        root = providers.get(provider.root)
        parent = None if provider.parent is None else providers.get(provider.parent)
        if root is None or (provider.parent is not None and parent is None):
            return None
        stocks = provider.stocks
        shown = (
            stocks.values()
            if settings.all_classes
            else [stocks[c] for c in shown_classes if c in stocks]
        )
        resources = {
            names.class_names[s.class_id]: {"capacity": s.capacity, "used": s.used}
            for s in shown
            if s.class_id in names.class_names
        }
        traits = (
            tuple(names.trait_names[t] for t in sorted(provider.traits) if t in names.trait_names)
            if settings.with_traits and provider.traits
            else NO_TRAITS
        )
        summary = ProviderSummary(
            resources, traits, None if parent is None else parent.uuid, root.uuid
        )
        if newest:
            # Kept with the provider: replaced with it, dropped when names change.
            provider.summary = summary
        found[ident] = summary
    return found
