"""Free DISK_GB across the host's tree (shared storage is not the host's own)."""

from __future__ import annotations

from scheduler.plugins.base import FreeResourceWeigher


class DiskWeigher(FreeResourceWeigher):
    name = "disk"
    description = "More free DISK_GB weighs more (less when the strategy is pack)."
    resource_class = "DISK_GB"
