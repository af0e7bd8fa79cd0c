"""Where the CPU of one ``PUT /allocations`` goes, phase by phase (for
``claims_profile.py --phases``): each phase's functions are wrapped to add up
this process's CPU time spent inside them. Claims run one at a time, so
nothing else runs meanwhile; what no phase holds is the request's path
around the handler (server glue, middleware, routing, dependencies, the
response) and the event loop."""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from sqlalchemy.orm import Session

from placement_api.db import session as db_session
from placement_api.db.session import UnitOfWork
from placement_api.domain import changes, claim_changes, claims, consumers
from placement_api.web import deps
from placement_api.web.routers import allocations as router
from placement_api.web.schemas import write_limits

# phase -> (owner, attribute): module functions the handler reaches by name.
PHASES: dict[str, tuple[Any, str]] = {
    "authorize (policy)": (deps.ApiRequest, "authorize"),
    "read the body (JSON)": (deps.ApiRequest, "body"),
    "write limits": (write_limits, "check_consumer_allocations"),
    "validate (jsonschema + pydantic)": (router, "load_body"),
    "to the domain's claim": (router, "to_claim"),
    "begin: pool checkout, ping, BEGIN": (UnitOfWork, "__aenter__"),
    "names: classes and providers": (claims, "_resolve_names"),
    "consumer: owners, insert": (consumers, "lock"),
    # A claim (PUT, POST) locks and bumps its providers inside the write;
    # DELETE and the reshaper lock them before it.
    "lock providers (DELETE, reshaper)": (claims, "lock_providers"),
    "write: lock, bump, rows, usage, settle": (claims, "write"),
    # Both inside the write (PUT, POST); PostgreSQL's statement inserts a
    # one-consumer claim's entry, the others are queued for the commit.
    "change feed: the entry for the statement": (claim_changes, "allocation_template"),
    "change feed: queue the entry": (claim_changes, "allocations_changed"),
    "change feed: append at commit": (changes, "_append_on_postgresql"),
    # The synchronous session's: the unit of work commits and closes in one
    # greenlet, not through AsyncSession.commit and close.
    "commit (less the feed's append)": (db_session, "commit_on_driver"),
    "close the session": (Session, "close"),
}


def wrapped(
    function: Callable[..., Any], name: str, spent: dict[str, float], clock: Callable[[], float]
) -> Callable[..., Any]:
    """``function``, adding the ``clock`` time spent inside it to ``spent[name]``."""
    depth = [0]  # a phase inside itself (a nested call) counts once

    if inspect.iscoroutinefunction(function):

        @functools.wraps(function)
        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            depth[0] += 1
            began = clock()
            try:
                return await function(*args, **kwargs)
            finally:
                depth[0] -= 1
                if not depth[0]:
                    spent[name] = spent.get(name, 0.0) + clock() - began

        return timed_async

    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        depth[0] += 1
        began = clock()
        try:
            return function(*args, **kwargs)
        finally:
            depth[0] -= 1
            if not depth[0]:
                spent[name] = spent.get(name, 0.0) + clock() - began

    return timed


@contextmanager
def timed_phases(
    spent: dict[str, float], clock: Callable[[], float] = time.process_time
) -> Iterator[None]:
    """Add up ``clock``'s time inside each phase (this process's CPU, or
    wall time with ``time.perf_counter``: then round trips and PostgreSQL's
    work are in it)."""
    with ExitStack() as undo:
        for name, (owner, attribute) in PHASES.items():
            original = getattr(owner, attribute)
            setattr(owner, attribute, wrapped(original, name, spent, clock))
            undo.callback(setattr, owner, attribute, original)
        yield


_NESTED = {
    "commit (less the feed's append)": ["change feed: append at commit"],
    "write: lock, bump, rows, usage, settle": [
        "change feed: the entry for the statement",
        "change feed: queue the entry",
    ],
}


def report(spent: dict[str, float], total: float, claims_count: int) -> str:
    """Milliseconds per claim (or request) by phase; the commit's and the
    write's shares exclude the feed's phases nested in them."""
    per = {name: 1000 * seconds / claims_count for name, seconds in spent.items()}
    for outer, inner in _NESTED.items():
        per[outer] = per.get(outer, 0.0) - sum(per.get(name, 0.0) for name in inner)
    lines = [f"{name:52s} {per.get(name, 0.0):6.3f} ms" for name in PHASES]
    inside = sum(per.values())
    whole = 1000 * total / claims_count
    rest = "the rest: server glue, middleware, routing, response"
    lines.append(f"{rest:52s} {whole - inside:6.3f} ms")
    lines.append(f"{'total':52s} {whole:6.3f} ms")
    return "\n".join(lines)
