"""Every filter; a new one is a module here and a line below."""

from scheduler.plugins.base import HostFilter
from scheduler.plugins.filters.aggregate_extra_specs import AggregateExtraSpecsFilter
from scheduler.plugins.filters.availability_zone import AvailabilityZoneFilter
from scheduler.plugins.filters.compute_enabled import ComputeEnabledFilter
from scheduler.plugins.filters.different_host import DifferentHostFilter
from scheduler.plugins.filters.force_hosts import ForceHostsFilter
from scheduler.plugins.filters.ignore_hosts import IgnoreHostsFilter
from scheduler.plugins.filters.image_properties import ImagePropertiesFilter
from scheduler.plugins.filters.liveness import LivenessFilter
from scheduler.plugins.filters.max_instances_per_host import MaxInstancesPerHostFilter
from scheduler.plugins.filters.metrics import MetricsFilter
from scheduler.plugins.filters.numa_topology import NumaTopologyFilter
from scheduler.plugins.filters.same_host import SameHostFilter
from scheduler.plugins.filters.server_group_affinity import ServerGroupAffinityFilter
from scheduler.plugins.filters.server_group_anti_affinity import ServerGroupAntiAffinityFilter

ALL_FILTERS: tuple[type[HostFilter], ...] = (
    IgnoreHostsFilter,
    ForceHostsFilter,
    AvailabilityZoneFilter,
    ComputeEnabledFilter,
    LivenessFilter,
    MetricsFilter,
    ImagePropertiesFilter,
    SameHostFilter,
    DifferentHostFilter,
    ServerGroupAffinityFilter,
    ServerGroupAntiAffinityFilter,
    MaxInstancesPerHostFilter,
    AggregateExtraSpecsFilter,
    NumaTopologyFilter,
)
