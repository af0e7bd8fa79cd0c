"""The host's enabled status in Placement: ``COMPUTE_STATUS_DISABLED`` on its root
provider, which schedulers honour. The agent sets it when it stops cleanly and
takes it away when it starts again, but never takes away a disable it did not set."""

from __future__ import annotations

import asyncio
import logging

from agent.placement import AgentPlacement
from agent.reporter import ConflictRetriesExhausted
from placement_client import ConcurrentUpdate, RetryPolicy

log = logging.getLogger(__name__)

DISABLED_TRAIT = "COMPUTE_STATUS_DISABLED"


async def set_disabled(
    client: AgentPlacement, provider_uuid: str, disabled: bool, retry: RetryPolicy
) -> bool:
    """Add or remove the trait, keeping every other trait; True if it changed.
    The write names the generation read just before, and is retried on a 409."""
    for attempt in range(retry.attempts):
        current = await client.get_traits(provider_uuid)
        if (DISABLED_TRAIT in current.traits) == disabled:
            return False
        wanted = current.traits ^ {DISABLED_TRAIT}
        try:
            await client.put_traits(provider_uuid, current.generation, wanted)
        except ConcurrentUpdate:
            await asyncio.sleep(retry.delay(attempt))
            continue
        log.info("%s provider %s", "disabled" if disabled else "re-enabled", provider_uuid)
        return True
    raise ConflictRetriesExhausted(
        f"provider {provider_uuid}: generation conflict on each of {retry.attempts} attempts "
        f"to {'add' if disabled else 'remove'} {DISABLED_TRAIT}"
    )
