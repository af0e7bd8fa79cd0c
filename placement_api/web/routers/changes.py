"""GET /changes: the change feed, an extension of this service (every microversion).

JSON by default; with ``Accept: text/event-stream`` the same feed as
server-sent events, for at most ``changes_max_wait`` seconds per response
(an EventSource reconnects by itself, sending ``Last-Event-ID``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from fastapi import APIRouter
from starlette.responses import Response, StreamingResponse

from placement_api import errors
from placement_api.auth.policies import change as policies
from placement_api.domain.feed_index import FeedPage
from placement_api.services.change_feed import ChangeFeed
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
    if wants_event_stream(api.request.headers.get("accept")):
        # An EventSource that reconnects says where it was in Last-Event-ID.
        last_event_id = api.request.headers.get("last-event-id")
        if last_event_id is not None:
            params["since"] = last_event_id
        query = load_query(schemas.ChangesQuery, params)
        first = await feed.follow(query.since, query.limit, 0)
        return StreamingResponse(
            _events(feed, first, query.limit), media_type=EVENT_STREAM_MEDIA_TYPE
        )
    query = load_query(schemas.ChangesQuery, params)
    page = await feed.follow(query.since, query.limit, query.wait)
    return json_response(
        api.version, {"index": page.index, "changes": page.changes, "epoch": page.epoch}
    )


def _event(name: str, data: object, index: int | None = None) -> str:
    head = f"id: {index}\n" if index is not None else ""
    return f"{head}event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


async def _events(feed: ChangeFeed, page: FeedPage, limit: int) -> AsyncIterator[str]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + feed.settings.changes_max_wait
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
        remaining = deadline - loop.time()
        if remaining <= 0:
            return
        if not page.changes:
            yield ": keep-alive\n\n"
        try:
            page = await feed.follow(since, limit, min(remaining, KEEPALIVE_SECONDS))
        except errors.ChangesGone as gone:
            yield _event("gone", {"index": gone.extra["index"], "detail": gone.detail})
            return
