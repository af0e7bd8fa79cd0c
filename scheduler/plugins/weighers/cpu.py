"""Free VCPU (capacity under the allocation ratio minus usage) across the host's tree."""

from __future__ import annotations

from scheduler.plugins.base import FreeResourceWeigher


class CpuWeigher(FreeResourceWeigher):
    name = "cpu"
    description = "More free VCPU weighs more (less when the strategy is pack)."
    resource_class = "VCPU"
