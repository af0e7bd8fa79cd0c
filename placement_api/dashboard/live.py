"""Keeps the dashboard's snapshot current: follows the change feed, re-reads on change.

Three loops share one ``LiveSnapshot``:

- the feed follower holds ``GET /changes?since=N&wait=S`` open; each answer
  with changes marks the snapshot stale (a 410, or a page of another epoch
  after a failover, re-reads from the feed's current index);
- the refresher waits for "stale" (or one history step), lets a burst of
  changes settle for ``debounce`` seconds, then re-reads capacity: one
  re-read at a time, its requests one after the other, so the API's load is
  bounded whatever the write rate; each re-read may add a history sample;
- the liveness poller reads ``GET /heartbeats`` every ``liveness_interval``
  seconds (heartbeats are not feed entries).

Each new snapshot wakes the browsers' event streams (``wait_newer``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from placement_api.dashboard.flavors import FlavorSpec
from placement_api.dashboard.history import History
from placement_api.dashboard.snapshot import Json, Liveness, Reads, Snapshot, build_snapshot
from placement_client import NotFound, PlacementClient, PlacementError

log = logging.getLogger(__name__)

FEED_WAIT_SECONDS = 20  # below the client's 30 s timeout
GONE = 410
FORBIDDEN = 403
BREAKDOWNS = "host,aggregate,az"  # every breakdown the page shows
GROUPS = "aggregate,az"


@dataclass(frozen=True)
class LiveOptions:
    debounce: float = 0.5
    liveness_interval: float = 10.0
    retry_interval: float = 5.0  # after a failed read, before the next try
    changes_kept: int = 30
    history_step: float = 60.0  # seconds between usage samples (a re-read at least as often)
    history_hours: float = 6.0


class LiveSnapshot:
    """The one snapshot of a dashboard process, and the loops that keep it current."""

    def __init__(
        self, client: PlacementClient, flavors: list[FlavorSpec], options: LiveOptions
    ) -> None:
        self._client = client
        self._flavors = flavors
        self._options = options
        self.snapshot = Snapshot(flavors=tuple(flavor.name for flavor in flavors))
        self._stale = asyncio.Event()
        self._published = asyncio.Event()
        self._changes: collections.deque[Json] = collections.deque(maxlen=options.changes_kept)
        self._feed_index: int | None = None
        self._liveness = Liveness(available=False, reason="not read yet")
        self._read: Reads | None = None
        self._history = History(options.history_step, options.history_hours)
        self._error: str | None = None
        self._read_at: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._publishing = asyncio.Lock()  # one build at a time: versions stay in order
        self.closing = False  # set when the process stops: event streams end

    async def run(self) -> None:
        """Until cancelled."""
        self._loop = asyncio.get_running_loop()
        async with asyncio.TaskGroup() as group:
            group.create_task(self._follow_feed())
            group.create_task(self._refresh_when_stale())
            group.create_task(self._poll_liveness())

    def close_streams(self) -> None:
        """From a signal handler: wake every event stream so that it ends (a server
        would otherwise wait for the browsers to hang up before it stops)."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._end_streams)

    def _end_streams(self) -> None:
        self.closing = True
        self._wake()

    async def wait_newer(self, version: int, within: float) -> bool:
        """Whether a snapshot newer than ``version`` exists, waiting up to ``within`` seconds."""
        if self.snapshot.version > version:
            return True
        published = self._published
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(published.wait(), within)
        return self.snapshot.version > version

    async def _follow_feed(self) -> None:
        since: int | None = None
        epoch: str | None = None
        while True:
            try:
                if since is None:
                    # Where to start; everything before it is read by the refresh.
                    head = await self._client.get("/changes")
                    since = self._feed_index = head["index"]
                    epoch = head.get("epoch")
                    self._stale.set()
                answer = await self._client.get(
                    "/changes", params={"since": since, "wait": FEED_WAIT_SECONDS}
                )
            except PlacementError as error:
                if error.status != GONE:
                    log.warning("following the change feed: %s", error)
                    await asyncio.sleep(self._options.retry_interval)
                    self._stale.set()  # without the feed, re-read every retry interval
                since = None  # start again from the current index, after a full re-read
                continue
            if answer.get("epoch") != epoch:
                # A failover may have given the indexes to other changes: start again.
                log.warning("the change feed's epoch changed: re-reading everything")
                since = None
                continue
            changes: list[Json] = answer["changes"]
            self._feed_index = answer["index"]
            if changes:
                seen_at = _now()
                self._changes.extendleft({**change, "seen_at": seen_at} for change in changes)
                since = changes[-1]["index"]
                self._stale.set()
            else:
                since = answer["index"]

    async def _refresh_when_stale(self) -> None:
        while True:
            # A quiet cloud is re-read once a history step too, for the history's sake.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stale.wait(), self._options.history_step)
            await asyncio.sleep(self._options.debounce)  # one re-read for a burst of changes
            self._stale.clear()
            try:
                self._read = await self._read_capacity()
                self._history.record(self._read)
                self._read_at, self._error = _now(), None
            except PlacementError as error:
                if _explain(error) != self._error:  # browsers re-read only when it says more
                    self._error = _explain(error)
                    log.warning("reading capacity: %s", error)
                    await self._publish()
                await asyncio.sleep(self._options.retry_interval)
                self._stale.set()
                continue
            await self._publish()

    async def _read_capacity(self) -> Reads:
        """Usage of the hosts counted; every host with its state; each flavor's fits.
        Credentials refused the per-host detail (403) still give the totals."""
        usage: Json = await self._client.get("/capacity", params={"by": GROUPS})
        refused = None
        try:
            hosts: Json = await self._client.get(
                "/capacity", params={"by": "host", "include_unavailable": "true"}
            )
        except PlacementError as error:
            if error.status != FORBIDDEN:
                raise
            hosts, refused = {}, str(error)
        by = GROUPS if refused else BREAKDOWNS
        fits: dict[str, Json] = {}
        for flavor in self._flavors:
            fits[flavor.name] = await self._client.get(
                "/capacity", params={"resources": flavor.resources, "by": by}
            )
        return Reads(usage, hosts, fits, hosts_refused=refused)

    async def _poll_liveness(self) -> None:
        while True:
            try:
                liveness = await self._read_liveness()
            except PlacementError as error:
                log.warning("reading heartbeats: %s", error)
                liveness = Liveness(available=False, reason=str(error))
            if liveness != self._liveness:
                self._liveness = liveness
                await self._publish()
            await asyncio.sleep(self._options.liveness_interval)

    async def _read_liveness(self) -> Liveness:
        try:
            answer: Json = await self._client.get("/heartbeats")
        except NotFound:
            # An API without heartbeats: liveness is unknown, not "all alive".
            return Liveness(available=False, reason="this API answers no GET /heartbeats")
        return Liveness(available=True, now=answer["now"], beats=tuple(answer["heartbeats"]))

    async def _publish(self) -> None:
        async with self._publishing:
            state: dict[str, Any] = {
                "version": self.snapshot.version + 1,
                "read_at": self._read_at,
                "feed_index": self._feed_index,
                "error": self._error,
            }
            if self._read is None:
                self.snapshot = replace(self.snapshot, **state)
            else:
                # Built in a thread: at 10,000 hosts it takes a few hundred ms, during
                # which the page's requests and event streams are still answered.
                changes, history = list(self._changes), self._history.samples()
                self.snapshot = await asyncio.to_thread(
                    build_snapshot, self._read, self._liveness, changes, history, **state
                )
        self._wake()

    def _wake(self) -> None:
        published, self._published = self._published, asyncio.Event()
        published.set()


def _explain(error: PlacementError) -> str:
    if error.status == 404:
        return f"{error.method} {error.path}: this API has no capacity report (404)"
    return str(error)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
