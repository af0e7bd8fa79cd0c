"""Every weigher; a new one is a module here and a line below."""

from scheduler.plugins.base import HostWeigher
from scheduler.plugins.weighers.cpu import CpuWeigher
from scheduler.plugins.weighers.disk import DiskWeigher
from scheduler.plugins.weighers.instance_count import InstanceCountWeigher
from scheduler.plugins.weighers.metrics import MetricsWeigher
from scheduler.plugins.weighers.ram import RamWeigher
from scheduler.plugins.weighers.server_group_soft_affinity import ServerGroupSoftAffinityWeigher
from scheduler.plugins.weighers.server_group_soft_anti_affinity import (
    ServerGroupSoftAntiAffinityWeigher,
)

ALL_WEIGHERS: tuple[type[HostWeigher], ...] = (
    RamWeigher,
    CpuWeigher,
    DiskWeigher,
    InstanceCountWeigher,
    MetricsWeigher,
    ServerGroupSoftAffinityWeigher,
    ServerGroupSoftAntiAffinityWeigher,
)
