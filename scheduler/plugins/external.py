"""Filters and weighers from outside this tree, through Python entry points.

A package registers a ``HostFilter`` subclass under the entry-point group
``placement_scheduler.filters`` (a ``HostWeigher`` under
``placement_scheduler.weighers``) with the plugin's name as the entry point's
name; settings enable it by that name like a built-in one (a built-in of the
same name wins). Only enabled plugins are imported, at start-up; one that fails
to import, is not of the right kind, or names itself otherwise stops start-up
with its name and the reason. docs/scheduler.md, "Writing a plugin".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import TypeVar, cast

from scheduler.plugins.base import HostFilter, HostWeigher, Plugin

FILTER_GROUP = "placement_scheduler.filters"
WEIGHER_GROUP = "placement_scheduler.weighers"

P = TypeVar("P", bound=Plugin)


class PluginLoadError(ValueError):
    """An enabled plugin from an entry point could not be loaded."""


def installed(group: str) -> dict[str, EntryPoint]:
    """The entry points of the group, by name (nothing is imported)."""
    return {point.name: point for point in entry_points(group=group)}


def load(point: EntryPoint, kind: type) -> type:
    where = f"{kind.__name__} plugin {point.name!r} ({point.value}, group {point.group})"
    try:
        found = point.load()
    except Exception as exc:  # whatever the plugin's import raises stops start-up
        raise PluginLoadError(f"{where} failed to load: {type(exc).__name__}: {exc}") from exc
    if not (isinstance(found, type) and issubclass(found, kind)):
        raise PluginLoadError(f"{where} is not a {kind.__name__} subclass: {found!r}")
    if getattr(found, "name", None) != point.name:
        raise PluginLoadError(f"{where} names itself {getattr(found, 'name', None)!r}")
    return found


def with_enabled(
    built_in: Mapping[str, type[P]], enabled: Iterable[str], group: str, kind: type
) -> dict[str, type[P]]:
    """The built-in plugins and the enabled ones of the entry-point group, by name."""
    plugins = dict(built_in)
    points = installed(group)
    for name in enabled:
        if name not in plugins and name in points:
            plugins[name] = cast(type[P], load(points[name], kind))
    return plugins


def filters_with(
    enabled: Iterable[str], built_in: Mapping[str, type[HostFilter]]
) -> dict[str, type[HostFilter]]:
    return with_enabled(built_in, enabled, FILTER_GROUP, HostFilter)


def weighers_with(
    enabled: Iterable[str], built_in: Mapping[str, type[HostWeigher]]
) -> dict[str, type[HostWeigher]]:
    return with_enabled(built_in, enabled, WEIGHER_GROUP, HostWeigher)


def available(built_in: Iterable[str], group: str) -> list[str]:
    """Every plugin name settings may enable: built-in and installed."""
    return sorted(set(built_in) | set(installed(group)))
