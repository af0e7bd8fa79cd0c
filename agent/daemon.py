"""The periodic loop: a pass at start, then every interval ± jitter, until told to stop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import signal

from agent.reporting_pass import Outcome, PassResult, ReportingPass

log = logging.getLogger(__name__)

# After a failed pass, retry sooner than the interval: 1 s, 2 s, 4 s ... up to it.
FIRST_RETRY_DELAY = 1.0


def next_delay(interval: float, jitter: float, failures: int) -> float:
    base = interval if failures == 0 else min(interval, FIRST_RETRY_DELAY * 2.0 ** (failures - 1))
    return base * random.uniform(1 - jitter, 1 + jitter)


async def run_until_stopped(
    reporting_pass: ReportingPass, interval: float, jitter: float, stop: asyncio.Event
) -> None:
    failures = 0
    while not stop.is_set():
        result = await _pass_unless_stopped(reporting_pass, stop)
        if result is None:
            break
        failures = failures + 1 if result.outcome is Outcome.FAILED else 0
        delay = next_delay(interval, jitter, failures)
        log.debug("next pass in %.1fs", delay)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), delay)
    log.info("agent stopped")


async def _pass_unless_stopped(
    reporting_pass: ReportingPass, stop: asyncio.Event
) -> PassResult | None:
    """Run one pass; a stop request cancels it (each API write is atomic on its own)."""
    pass_task = asyncio.create_task(reporting_pass.run())
    stop_task = asyncio.create_task(stop.wait())
    await asyncio.wait({pass_task, stop_task}, return_when=asyncio.FIRST_COMPLETED)
    stop_task.cancel()
    if pass_task.done():
        return pass_task.result()
    pass_task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await pass_task
    return None


def stop_on_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, _request_stop, stop, signum)


def _request_stop(stop: asyncio.Event, signum: int) -> None:
    log.info("received %s, stopping", signal.Signals(signum).name)
    stop.set()
