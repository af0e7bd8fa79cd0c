"""What ``PlacementHttpProtocol`` takes from uvicorn's ``HttpToolsProtocol``
and httptools, and ``Supervisor`` from uvicorn's ``Multiprocess``, checked
before serving: each gap is one line naming the library and what changed."""

from __future__ import annotations

import inspect
from importlib import metadata

import httptools
from uvicorn.protocols.http import httptools_impl
from uvicorn.supervisors import multiprocess

from placement_api.serving.http_protocol import PlacementHttpProtocol

_USER = "placement_api.serving.http_protocol.PlacementHttpProtocol"
# The methods ours overrides or calls, with the arguments theirs take.
_METHODS = (
    "connection_made",
    "connection_lost",
    "data_received",
    "on_message_begin",
    "on_url",
    "on_header",
    "on_headers_complete",
    "on_message_complete",
    "on_response_complete",
    "pause_writing",
    "resume_writing",
    "_unset_keepalive_if_required",
    "_unsupported_upgrade_warning",
)


def _changed(library: str, change: str, user: str = _USER) -> str:
    return f"{library} {metadata.version(library)} changed what {user} relies on: {change}"


def _source(thing: object) -> str:
    try:
        return inspect.getsource(thing)  # type: ignore[arg-type]
    except (OSError, TypeError):
        return ""


def _method_gaps(base: type) -> list[str]:
    gaps = []
    for name in _METHODS:
        theirs = getattr(base, name, None)
        if theirs is None:
            gaps.append(_changed("uvicorn", f"HttpToolsProtocol.{name} is gone"))
            continue
        ours = getattr(PlacementHttpProtocol, name)
        if len(inspect.signature(theirs).parameters) != len(inspect.signature(ours).parameters):
            gaps.append(_changed("uvicorn", f"HttpToolsProtocol.{name} takes other arguments"))
    return gaps


def protocol_gaps() -> list[str]:
    """Why ``PlacementHttpProtocol`` cannot serve; empty when it can."""
    base = httptools_impl.HttpToolsProtocol
    gaps = _method_gaps(base)
    received = _source(base.data_received)
    for step in ("self._unset_keepalive_if_required()", "self.parser.feed_data(data)"):
        if step not in received:
            gaps.append(
                _changed("uvicorn", f"data_received (which ours mirrors) no longer does {step}")
            )
    setup = _source(base.__init__) + _source(getattr(base, "connection_made", None))
    for attribute in ("self.parser", "self.cycle", "self.loop", "self.logger", "self.transport"):
        if attribute not in setup:
            gaps.append(_changed("uvicorn", f"HttpToolsProtocol no longer sets {attribute}"))
    cycle = _source(httptools_impl.RequestResponseCycle.__init__)
    for attribute in ("disconnected", "message_event", "response_started", "response_complete"):
        if f"self.{attribute}" not in cycle:
            gaps.append(_changed("uvicorn", f"RequestResponseCycle no longer has {attribute}"))
    if not issubclass(httptools.HttpParserCallbackError, httptools.HttpParserError):
        gaps.append(_changed("httptools", "a callback's error is no longer an HttpParserError"))
    return gaps


def supervisor_gaps() -> list[str]:
    """Why ``serving.supervisor.Supervisor`` cannot supervise; empty when it can."""
    user = "placement_api.serving.supervisor.Supervisor"
    gaps = []
    needed = {
        multiprocess.Multiprocess: ("keep_subprocess_alive", "run"),
        multiprocess.Process: ("ping", "kill", "join", "start", "pid", "exitcode"),
    }
    for owner, names in needed.items():
        for name in names:
            if not hasattr(owner, name):
                gaps.append(_changed("uvicorn", f"{owner.__name__}.{name} is gone", user))
    setup = _source(multiprocess.Multiprocess.__init__) + _source(multiprocess.Process.__init__)
    for attribute in ("self.processes", "self.sockets", "self.should_exit", "self.process"):
        if attribute not in setup:
            gaps.append(_changed("uvicorn", f"the supervisor no longer sets {attribute}", user))
    return gaps
