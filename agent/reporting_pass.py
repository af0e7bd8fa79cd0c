"""One reporting pass: discover the host, plan, bring Placement up to date, reconcile."""

from __future__ import annotations

import asyncio
import enum
import logging
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from agent.discovery import DiscoveryError, HostFacts, build_host_facts, read_host
from agent.host_status import set_disabled
from agent.inventory import HostPlan, HostPlanError, build_host_plan
from agent.metrics import LAST_SUCCESS, PASSES
from agent.placement import AgentPlacement
from agent.provider_config import ProviderConfigError, load_provider_config
from agent.reconcile import Drift, reconcile
from agent.reporter import (
    ConflictRetriesExhausted,
    ProviderNameTaken,
    ProviderReport,
    Reporter,
    conflict_retry,
)
from agent.settings import AgentSettings
from agent.state import AgentState, StateError, StateStore
from agent.tree import ReshapeForbidden, TreeKeeper, TreeReport
from agent.utilisation import UtilisationMeter
from placement_client import PlacementError

log = logging.getLogger(__name__)

# Failures that are about the world, not the agent: logged without a traceback.
PASS_FAILURES = (
    DiscoveryError,
    HostPlanError,
    PlacementError,
    ConflictRetriesExhausted,
    ProviderNameTaken,
    ProviderConfigError,
    ReshapeForbidden,
    StateError,
)


class Outcome(enum.IntEnum):
    """Also the exit status of ``placement-agent --once``."""

    SYNCED = 0
    FAILED = 1
    DRIFT = 3
    IN_USE = 4


@dataclass
class PassResult:
    outcome: Outcome
    provider_name: str | None = None
    provider_uuid: str | None = None
    reports: list[ProviderReport] = field(default_factory=list)
    tree: TreeReport = field(default_factory=TreeReport)
    drift: Drift | None = None
    error: str | None = None
    # Utilisation measured this pass, and whether the heartbeat carrying it went through.
    metrics: dict[str, float] = field(default_factory=dict)
    heartbeat_sent: bool = False


def discover(settings: AgentSettings) -> HostFacts:
    return build_host_facts(read_host(settings.libvirt_uri, settings.instances_path))


def plan_for(settings: AgentSettings, facts: HostFacts, root_uuid: str) -> HostPlan:
    provider_config = load_provider_config(settings.provider_config)
    name = settings.provider_name or facts.hostname
    return build_host_plan(facts, settings, provider_config, root_uuid, name)


def heartbeat_interval(pass_interval: float) -> int:
    """The pass interval as the whole seconds (1 to a day) a heartbeat announces."""
    return min(max(math.ceil(pass_interval), 1), 86_400)


class ReportingPass:
    """``manages_host_status``: this is the daemon's pass, which re-enables a host
    it disabled when it last stopped (``--once`` leaves the status alone)."""

    def __init__(
        self,
        settings: AgentSettings,
        client: AgentPlacement,
        discover_host: Callable[[AgentSettings], HostFacts] = discover,
        *,
        manages_host_status: bool = False,
    ) -> None:
        self._settings = settings
        self._discover = discover_host
        self._client = client
        self._retry = conflict_retry(settings.conflict_retries)
        self._reporter = Reporter(client, self._retry)
        self._tree = TreeKeeper(client, self._reporter, self._retry)
        self._store = StateStore(settings.state_dir)
        self._meter = UtilisationMeter()
        self._manages_host_status = manages_host_status

    async def run(self) -> PassResult:
        started = time.monotonic()
        try:
            result = await self._run()
        except PASS_FAILURES as error:
            log.error("pass failed: %s", error)
            result = PassResult(Outcome.FAILED, error=str(error))
        except Exception as error:  # the daemon outlives a bug; the traceback says where
            log.exception("pass failed unexpectedly")
            result = PassResult(Outcome.FAILED, error=repr(error))
        if result.outcome is not Outcome.FAILED and self._settings.heartbeat:
            result.heartbeat_sent = await self._send_heartbeat(result)
        label = result.provider_name or self._settings.provider_name or ""
        PASSES.labels(label, result.outcome.name.lower()).inc()
        if result.outcome is not Outcome.FAILED:
            LAST_SUCCESS.labels(label).set_to_current_time()
        log.info("pass finished: %s in %.2fs", result.outcome.name, time.monotonic() - started)
        return result

    async def _run(self) -> PassResult:
        facts = await asyncio.to_thread(self._discover, self._settings)
        metrics = self._meter.measure(facts)
        name = self._settings.provider_name or facts.hostname
        state = await self._load_or_adopt_state(name)
        plan = plan_for(self._settings, facts, state.root_provider_uuid)
        started = {p.uuid: ProviderReport(uuid=p.uuid, name=p.name) for p in plan.providers}
        plan, tree = await self._tree.settle(plan, started)
        reports = [
            await self._reporter.sync(
                provider, state.configured_traits_of(provider.uuid), started[provider.uuid]
            )
            for provider in plan.providers
        ]
        self._remember_configured_traits(state, plan)
        if self._manages_host_status and state.disabled_by_agent:
            await set_disabled(self._client, plan.root.uuid, False, self._retry)
            state.disabled_by_agent = False
            self._store.save(state)
        reconciled = [*(p.uuid for p in plan.providers), *tree.kept]
        drift = await reconcile(self._client, name, reconciled, facts.domains)
        return PassResult(
            outcome=_outcome(reports, tree, drift),
            provider_name=name,
            provider_uuid=plan.root.uuid,
            reports=reports,
            tree=tree,
            drift=drift,
            metrics=metrics,
        )

    async def _send_heartbeat(self, result: PassResult) -> bool:
        """A failed heartbeat leaves the pass's outcome alone: the next pass sends another."""
        assert result.provider_uuid is not None  # every pass that did not fail knows its root
        interval = heartbeat_interval(self._settings.interval)
        try:
            await self._client.put_heartbeat(result.provider_uuid, interval, result.metrics)
        except PlacementError as error:
            log.warning("heartbeat not sent (the next pass tries again): %s", error)
            return False
        return True

    async def disable_host(self) -> None:
        """After a clean stop: mark the host disabled, remembering that the agent did."""
        state = self._store.load()
        if state is None or not self._settings.disable_on_stop:
            return
        try:
            changed = await set_disabled(self._client, state.root_provider_uuid, True, self._retry)
        except (PlacementError, ConflictRetriesExhausted) as error:
            log.error("could not mark the host disabled on stop: %s", error)
            return
        if changed:
            state.disabled_by_agent = True
            self._store.save(state)

    async def _load_or_adopt_state(self, name: str) -> AgentState:
        """A new state directory adopts the root provider already reported under this name."""
        state = self._store.load()
        if state is not None:
            return state
        existing = await self._client.find_provider_by_name(name)
        if existing is not None and existing.parent_uuid is None:
            log.info("adopting existing provider %s (%s)", name, existing.uuid)
            root_uuid = existing.uuid
        else:
            root_uuid = str(uuid.uuid4())
        state = AgentState(root_provider_uuid=root_uuid)
        self._store.save(state)
        return state

    def _remember_configured_traits(self, state: AgentState, plan: HostPlan) -> None:
        configured = {p.uuid: sorted(p.config_traits) for p in plan.providers if p.config_traits}
        if configured != state.configured_traits:
            state.configured_traits = configured
            self._store.save(state)


def _outcome(reports: list[ProviderReport], tree: TreeReport, drift: Drift) -> Outcome:
    if tree.held or tree.kept or any(report.held_in_use for report in reports):
        return Outcome.IN_USE
    if drift.found:
        return Outcome.DRIFT
    return Outcome.SYNCED
