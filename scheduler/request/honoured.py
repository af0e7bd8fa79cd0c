"""Extra specs that only a filter honours are refused when that filter is not enabled:
the request would otherwise be scheduled as if they were not there."""

from __future__ import annotations

from flavors.extra_specs import UnsupportedExtraSpec, is_aggregate_key
from flavors.hardware import thread_policy
from scheduler.request.spec import ScheduleRequest
from scheduler.settings import SchedulerSettings

AGGREGATE_FILTER = "aggregate_extra_specs"
NUMA_FILTER = "numa_topology"


def check_honoured(spec: ScheduleRequest, settings: SchedulerSettings) -> None:
    enabled = set(settings.enabled_filters)
    if AGGREGATE_FILTER not in enabled:
        for key in sorted(spec.extra_specs):
            if is_aggregate_key(key):
                raise UnsupportedExtraSpec(key, _needs(AGGREGATE_FILTER, "aggregate metadata"))
    if NUMA_FILTER not in enabled and thread_policy(spec.extra_specs, spec.image) is not None:
        raise UnsupportedExtraSpec("hw:cpu_thread_policy", _needs(NUMA_FILTER, "the thread policy"))


def _needs(filter_name: str, what: str) -> str:
    return f"{what} is checked by the {filter_name} filter, which is not enabled"
