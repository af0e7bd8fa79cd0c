"""Request ids as OpenStack writes them: what the protocol gives an answer it
makes itself, and the middleware a request that brought none."""

from __future__ import annotations

import uuid


def new_request_id() -> str:
    return f"req-{uuid.uuid4()}"
