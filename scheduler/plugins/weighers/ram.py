"""Free memory (capacity under the allocation ratio minus usage) across the host's tree."""

from __future__ import annotations

from scheduler.plugins.base import FreeResourceWeigher


class RamWeigher(FreeResourceWeigher):
    name = "ram"
    description = "More free MEMORY_MB weighs more (less when the strategy is pack)."
    resource_class = "MEMORY_MB"
