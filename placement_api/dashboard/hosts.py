"""Which ``Host`` headers the dashboard answers: its own address and configured names.

Viewers are not authenticated, so a page from any web site could read the
dashboard through DNS rebinding (a name of the attacker's that resolves to
127.0.0.1, reaching the dashboard or an SSH tunnel to it) unless the
dashboard refuses requests addressed to names it does not know: those get
a 400 and no data (docs/dashboard.md).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
# A wildcard bind has no address of its own to match.
_WILDCARDS = ("", "0.0.0.0", "::")  # names to recognise, not to bind


def allowed_hosts(bind: str, configured: Iterable[str]) -> frozenset[str]:
    """The loopback names, the address the dashboard listens on, and ``configured``."""
    names = {*LOOPBACK_NAMES, *(name.strip().lower() for name in configured if name.strip())}
    if bind not in _WILDCARDS:
        names.add(bind.strip("[]").lower())
    return frozenset(names)


def host_name(header: str) -> str | None:
    """The name of a ``Host`` header without its port (``[::1]:8780`` -> ``::1``);
    None when it is not a host[:port]."""
    try:
        parts = urlsplit(f"//{header}")
        parts.port  # noqa: B018 - raises ValueError on a port that is no number
    except ValueError:
        return None
    if not parts.hostname or parts.username is not None or parts.path:
        return None
    return parts.hostname.lower()


class HostCheck:
    """ASGI middleware: HTTP requests whose ``Host`` is not allowed get a 400."""

    def __init__(self, app: ASGIApp, allowed: Collection[str]) -> None:
        self._app = app
        self._allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        header = Headers(scope=scope).get("host", "")
        if host_name(header) in self._allowed:
            await self._app(scope, receive, send)
            return
        response = PlainTextResponse(
            f"Host {header[:100]!r} is not one this dashboard answers to: it answers "
            f"{', '.join(sorted(self._allowed))} (--allowed-host adds names).",
            status_code=400,
        )
        await response(scope, receive, send)
