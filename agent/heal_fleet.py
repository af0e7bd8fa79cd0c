"""``placement-agent heal`` over one host or many (``--host NAME=URI``), one report each."""

from __future__ import annotations

import asyncio

from agent import heal as healing
from agent.placement import AgentPlacement
from agent.reporting_pass import PASS_FAILURES, discover
from agent.settings import AgentSettings
from agent.state import StateStore
from placement_client import PlacementClient

# (root provider name, libvirt URI); no name: the agent's own host.
Target = tuple[str | None, str]


def parse_target(value: str) -> Target:
    """``NAME=LIBVIRT_URI``; a ValueError names what is wrong."""
    name, separator, uri = value.partition("=")
    if not separator or not name or not uri:
        raise ValueError(f"--host takes NAME=LIBVIRT_URI, not {value!r}")
    return name, uri


async def heal_hosts(
    settings: AgentSettings,
    client: PlacementClient,
    targets: list[Target],
    options: healing.HealOptions,
) -> list[healing.HealReport]:
    """Each host in turn; one that cannot be healed is reported, and the rest go on.
    The agent's own host (no name) is the root provider its state directory names."""
    state = StateStore(settings.state_dir).load() if targets[0][0] is None else None
    ledger = healing.OrphanLedger(settings.state_dir)
    placement = AgentPlacement(client)
    reports = []
    for name, uri in targets:
        host_settings = settings.model_copy(update={"libvirt_uri": uri})
        try:
            facts = await asyncio.to_thread(discover, host_settings)
            named = name or settings.provider_name or facts.hostname
            known = state.root_provider_uuid if state else None
            root = await healing.find_root(placement, known, named)
            report = await healing.heal(placement, root, facts.domains, ledger, options)
        except (*PASS_FAILURES, healing.HostNotReported) as error:
            report = healing.HealReport(name or uri, "", error=str(error))
        reports.append(report)
    return reports
