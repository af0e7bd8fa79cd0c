"""A worker's copy of the change feed's tail, which its readers are served
from: the feed's last index and the newest changes, gap-free, refreshed by
the worker's one reader (``change_feed.ChangeFeed``) as the Kubernetes API
server's watch cache is, so the database is read once per change, not once
per waiting client."""

from __future__ import annotations

from collections import deque
from itertools import islice
from typing import Any

from placement_api.domain.feed_index import FeedHead, FeedPage


class FeedTail:
    def __init__(self, size: int) -> None:
        # The feed's last index when last refreshed; None before the first refresh.
        self.index: int | None = None
        # The epoch the indexes belong to (docs/ha.md): a new one restarts the tail.
        self.epoch = ""
        # The changes up to ``index``, oldest first, without a hole (at most ``size``).
        self.changes: deque[dict[str, Any]] = deque(maxlen=size)

    def restart(self, head: FeedHead) -> None:
        """Forget the changes kept: the next ones start after the head's index."""
        self.index = head.index
        self.epoch = head.epoch
        self.changes.clear()

    def extend(self, page: FeedPage) -> int:
        """Add a page read after ``index`` (its changes follow on without a
        hole); the index after them."""
        self.changes.extend(page.changes)
        index: int = page.changes[-1]["index"] if page.changes else page.index
        self.index = index
        return index

    def forget_before(self, first: int | None) -> None:
        """Drop the changes the feed no longer holds (pruned: older than ``first``)."""
        changes = self.changes
        while changes and (first is None or changes[0]["index"] < first):
            changes.popleft()

    def page(self, since: int | None, limit: int) -> FeedPage | None:
        """The changes after ``since`` (at most ``limit``), or None when this
        tail cannot tell: ``since`` is older than the changes kept, or beyond
        the feed (the database says whether it is gone)."""
        index = self.index
        if index is None:
            return None
        if since is None or since == index:
            return FeedPage(index, [], self.epoch)
        first = self.changes[0]["index"] if self.changes else index + 1
        if since > index or since + 1 < first:
            return None
        start = since + 1 - first
        return FeedPage(index, list(islice(self.changes, start, start + limit)), self.epoch)
