"""Plugins by name: configuration enables and orders them by these names."""

from scheduler.plugins.base import HostFilter, HostWeigher
from scheduler.plugins.filters import ALL_FILTERS
from scheduler.plugins.weighers import ALL_WEIGHERS

FILTERS: dict[str, type[HostFilter]] = {cls.name: cls for cls in ALL_FILTERS}
WEIGHERS: dict[str, type[HostWeigher]] = {cls.name: cls for cls in ALL_WEIGHERS}
