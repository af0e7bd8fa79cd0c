"""GET /changes: the change feed, an extension of this service (every microversion).

JSON by default; with ``Accept: text/event-stream`` the same feed as
server-sent events, for at most ``changes_max_wait`` seconds per response
(an EventSource reconnects by itself, sending ``Last-Event-ID``). Waits end
in time for their answer to beat the request's deadline; each worker holds
at most ``changes_max_waiters`` long-polls and ``changes_max_streams``
streams (503 past them).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from placement_api import errors
from placement_api.auth.policies import change as policies
from placement_api.domain.feed_index import FeedPage
from placement_api.services.change_feed import ChangeFeed, Slots
from placement_api.settings import Settings
from placement_api.web.deps import (
    EVENT_STREAM_MEDIA_TYPE,
    EventStreamApiDep,
    services,
    wants_event_stream,
)
from placement_api.web.fastpath.lean_route import PlacementRoute
from placement_api.web.rendering import json_response
from placement_api.web.schemas import changes as schemas
from placement_api.web.schemas.validation import load_query

router = APIRouter(tags=["changes"], route_class=PlacementRoute)

# An event stream with nothing to say sends a comment this often, so proxies keep it open.
KEEPALIVE_SECONDS = 15.0
# A wait ends this long (at most a tenth of the request timeout) before the
# request's deadline, so its answer goes out before the deadline cuts it.
REPLY_MARGIN = 1.0


@router.get(
    "/changes",
    operation_id="listChanges",
    description=(
        "The changes committed after index `since`, oldest first: `index` is the feed's "
        "latest index, so a client resumes from the last change's index (or from `index` "
        "when none came). With `wait`, an answer with no change is held until one commits "
        "(or `wait` seconds pass). 410 `placement.changes.gone`: the changes after `since` "
        "were pruned (or `since` is beyond the feed); re-read what you follow, then resume "
        "from the error's `index`. With `Accept: text/event-stream`, server-sent events "
        "(`id` = index, `event: change`, `data` = the change; `Last-Event-ID` resumes; "
        "first an `event: epoch`). "
        "See docs/changes.md."
    ),
    responses={
        200: {
            "model": schemas.ChangeList,
            "content": {EVENT_STREAM_MEDIA_TYPE: {"schema": {"type": "string"}}},
        },
    },
)
async def list_changes(api: EventStreamApiDep) -> Response:
    api.authorize(policies.LIST)
    params = dict(api.request.query_params)
    feed = services(api.request).change_feed
    loop = asyncio.get_running_loop()
    if wants_event_stream(api.request.headers.get("accept")):
        # An EventSource that reconnects says where it was in Last-Event-ID.
        last_event_id = api.request.headers.get("last-event-id")
        if last_event_id is not None:
            params["since"] = last_event_id
        query = load_query(schemas.ChangesQuery, params)
        until = _answer_by(api.request, feed.settings.changes_max_wait)
        _take(feed.streams, "event streams", feed.settings)
        try:
            first = await feed.follow(query.since, query.limit, loop.time())
        except BaseException:
            feed.streams.give_back()
            raise
        return _FeedStream(_events(feed, first, query.limit, until), feed.streams)
    query = load_query(schemas.ChangesQuery, params)
    until = _answer_by(api.request, min(query.wait, feed.settings.changes_max_wait))
    if until <= loop.time():
        page = await feed.follow(query.since, query.limit, until)
    else:
        _take(feed.long_polls, "waiting requests", feed.settings)
        try:
            page = await feed.follow(query.since, query.limit, until)
        finally:
            feed.long_polls.give_back()
    return json_response(
        api.version, {"index": page.index, "changes": page.changes, "epoch": page.epoch}
    )


def _answer_by(request: Request, wait: float) -> float:
    """When a wait of ``wait`` seconds must end (the loop's time): in time for
    the answer to go out before the request's own deadline cuts it."""
    loop = asyncio.get_running_loop()
    until = loop.time() + wait
    deadline: float | None = getattr(request.state, "deadline", None)
    if deadline is None:
        return until
    timeout = services(request).change_feed.settings.request_timeout
    return min(until, deadline - min(REPLY_MARGIN, timeout / 10))


def _take(slots: Slots, what: str, settings: Settings) -> None:
    if not slots.take():
        raise errors.ServiceUnavailable(
            f"This server holds as many {what} on the change feed as it may "
            f"({slots.most}); retry later.",
            headers={"Retry-After": str(settings.retry_after)},
        )


class _FeedStream(StreamingResponse):
    """An event stream that gives its slot back however it ends."""

    def __init__(self, events: AsyncIterator[str], slots: Slots) -> None:
        super().__init__(events, media_type=EVENT_STREAM_MEDIA_TYPE)
        self._slots = slots

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._slots.give_back()


def _event(name: str, data: object, index: int | None = None) -> str:
    head = f"id: {index}\n" if index is not None else ""
    return f"{head}event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


async def _events(feed: ChangeFeed, page: FeedPage, limit: int, until: float) -> AsyncIterator[str]:
    loop = asyncio.get_running_loop()
    yield "retry: 1000\n\n"
    # The history the ids belong to (docs/ha.md): a client that reconnects compares it.
    epoch = page.epoch
    yield _event("epoch", {"epoch": epoch})
    while True:
        if page.epoch != epoch:
            yield _event("gone", {"index": page.index, "detail": "The feed's epoch changed."})
            return
        for change in page.changes:
            yield _event("change", change, change["index"])
        since = page.changes[-1]["index"] if page.changes else page.index
        if loop.time() >= until:
            return
        if not page.changes:
            yield ": keep-alive\n\n"
        try:
            wait_until = min(until, loop.time() + KEEPALIVE_SECONDS)
            page = await feed.follow(since, limit, wait_until, fresh=False)
        except errors.ChangesGone as gone:
            yield _event("gone", {"index": gone.extra["index"], "detail": gone.detail})
            return
