"""Flavor extra specs against the metadata of the host's aggregates.

Keys scoped ``aggregate_instance_extra_specs:`` and unscoped keys are checked;
other scoped keys (``resources:``, ``trait:``, ``hw:``...) and
``group_policy`` belong to someone else. A value may carry an operator, see
``extra_specs_ops``. Aggregate metadata comes from ``settings.aggregates``.

Each requirement also becomes a ``member_of`` term of the candidates query
(the aggregates whose metadata satisfies it), so ``limit`` cannot hide a
matching host; the verdict then explains what Placement already selected.
"""

from __future__ import annotations

from collections.abc import Iterator

from scheduler.placement.host_state import HostState
from scheduler.plugins.base import PASS, HostFilter, Verdict, reject
from scheduler.plugins.cycle import Cycle
from scheduler.plugins.extra_specs_ops import satisfies

SCOPE = "aggregate_instance_extra_specs"
_NOT_AGGREGATE_KEYS = {"group_policy"}


def aggregate_requirements(extra_specs: dict[str, str]) -> Iterator[tuple[str, str]]:
    for key, requirement in extra_specs.items():
        scope, colon, rest = key.partition(":")
        if colon and scope != SCOPE:
            continue
        name = rest if colon else key
        if name not in _NOT_AGGREGATE_KEYS:
            yield name, requirement


class AggregateExtraSpecsFilter(HostFilter):
    name = "aggregate_extra_specs"
    description = "Keeps hosts whose aggregate metadata satisfies the flavor's extra specs."

    async def prepare(self, cycle: Cycle) -> None:
        for key, requirement in aggregate_requirements(cycle.spec.extra_specs):
            matching = tuple(
                sorted(
                    uuid
                    for uuid, config in cycle.settings.aggregates.items()
                    if key in config.metadata and satisfies(config.metadata[key], requirement)
                )
            )
            if not matching:
                cycle.refuse(f"no aggregate's metadata has {key} matching {requirement!r}")
            cycle.terms.member_of.append(matching)
            cycle.terms.why.append(f"{key} {requirement!r}: member_of=in:{','.join(matching)}")

    def applies(self, context: Cycle) -> bool:
        return any(aggregate_requirements(dict(context.extra_specs)))

    def verdict(self, host: HostState, context: Cycle) -> Verdict:
        for key, requirement in aggregate_requirements(dict(context.extra_specs)):
            values = host.aggregate_metadata.get(key)
            if not values:
                return reject(f"aggregate metadata: no {key} (flavor wants {requirement!r})")
            if not any(satisfies(value, requirement) for value in values):
                shown = ",".join(sorted(values))
                return reject(f"aggregate metadata: {key}={shown} does not match {requirement!r}")
        return PASS
