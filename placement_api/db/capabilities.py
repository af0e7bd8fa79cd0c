"""What ``db.driver`` takes from SQLAlchemy's private parts, checked at
start-up: each gap is one line naming the library and what changed."""

from __future__ import annotations

import inspect
from importlib import metadata

from sqlalchemy import Integer, column, event, select, table
from sqlalchemy.dialects.postgresql import asyncpg as sa_asyncpg
from sqlalchemy.orm import session as orm_session
from sqlalchemy.sql.compiler import SQLCompiler

_USER = "placement_api.db.driver"


def _changed(change: str) -> str:
    return f"SQLAlchemy {metadata.version('SQLAlchemy')} changed what {_USER} relies on: {change}"


def _source(thing: object) -> str:
    try:
        return inspect.getsource(thing)  # type: ignore[arg-type]
    except (OSError, TypeError):
        return ""


def _adapter_gaps() -> list[str]:
    """The asyncpg adapter's transaction state, which ``begin_transaction`` sets."""
    adapter = sa_asyncpg.AsyncAdapt_asyncpg_connection
    start = getattr(adapter, "_start_transaction", None)
    if start is None or not inspect.iscoroutinefunction(start):
        return [_changed("AsyncAdapt_asyncpg_connection._start_transaction is gone")]
    gaps = []
    if not isinstance(inspect.getattr_static(adapter, "autocommit", None), property):
        gaps.append(_changed("AsyncAdapt_asyncpg_connection.autocommit is no longer a property"))
    if "self._transaction = None" not in _source(adapter.__init__):
        gaps.append(_changed("the asyncpg adapter no longer keeps its open transaction"))
    # The adapter itself begins on the first statement exactly as begin_transaction does.
    cursor = getattr(sa_asyncpg, "AsyncAdapt_asyncpg_cursor", None)
    if "adapt_connection._transaction is None" not in _source(
        getattr(cursor, "_prepare_and_execute", None)
    ):
        gaps.append(_changed("the adapter no longer begins when _transaction is None"))
    return gaps


def _before_commit_gaps() -> list[str]:
    """``commit_on_driver`` runs the ``before_commit`` listeners as ``Session.commit`` does."""
    prepare = _source(orm_session.SessionTransaction._prepare_impl)
    if "self.session.dispatch.before_commit(self.session)" not in prepare:
        return [_changed("Session.commit no longer runs before_commit through dispatch")]
    session = orm_session.Session()
    seen: list[orm_session.Session] = []
    event.listen(session, "before_commit", seen.append)
    session.dispatch.before_commit(session)
    if seen != [session]:
        return [_changed("Session.dispatch.before_commit no longer calls the listeners")]
    return []


def _cache_key_gaps() -> list[str]:
    """``positional_sql`` reuses one compiled statement for all of one structure."""
    things = table("things", column("id", Integer), column("size", Integer))
    first = select(things.c.id).where(things.c.size == 5)._generate_cache_key()
    second = select(things.c.id).where(things.c.size == 7)._generate_cache_key()
    if first is None or second is None:
        return [_changed("_generate_cache_key() gives no key for a plain SELECT")]
    gaps = []
    if first.key != second.key:
        gaps.append(_changed("cache keys of statements differing only in values differ"))
    if [p.value for p in second.bindparams] != [7]:
        gaps.append(_changed("CacheKey.bindparams no longer carries the statement's values"))
    for name, parameter in (
        ("__init__", "cache_key"),
        ("construct_params", "extracted_parameters"),
        ("construct_params", "escape_names"),
        ("construct_expanded_state", "escape_names"),
    ):
        method = getattr(SQLCompiler, name, None)
        if method is None or parameter not in inspect.signature(method).parameters:
            gaps.append(_changed(f"SQLCompiler.{name}() has no parameter {parameter!r}"))
    return gaps


def direct_driver_gaps() -> list[str]:
    """Why statements cannot go to asyncpg directly; empty when they can."""
    return _adapter_gaps() + _before_commit_gaps() + _cache_key_gaps()
