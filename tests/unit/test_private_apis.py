"""What the fast paths take from libraries' private parts, checked so that an
upgrade that changes it fails here, naming the library and what changed,
rather than somewhere deep in a request.

- ``placement_api.domain.candidates.fetching``: SQLAlchemy's asyncpg adapter
  (``_transaction``, ``autocommit``, ``_start_transaction``) and statement
  cache keys (``_generate_cache_key``, ``compile(cache_key=)``,
  ``construct_params(extracted_parameters=)``, ``construct_expanded_state``).
- ``placement_api.db.prepared``: the same adapter state (``begin_transaction``)
  and ``Session.dispatch.before_commit`` (``commit_on_driver`` runs the
  session's ``before_commit`` listeners as ``Session.commit`` does).
- ``placement_api.serving.http_protocol``: uvicorn's ``HttpToolsProtocol``, whose
  ``data_received`` it mirrors and whose parser callbacks and request cycle
  it uses.

The versions these were checked with are pinned in ``requirements.lock``.
"""

from __future__ import annotations

import inspect
from importlib import metadata
from pathlib import Path

import httptools
import pytest
from oslo_policy import _checks
from sqlalchemy import Integer, bindparam, column, event, select, table
from sqlalchemy.dialects.postgresql import asyncpg as sa_asyncpg
from sqlalchemy.orm import session as orm_session
from sqlalchemy.sql.compiler import SQLCompiler
from uvicorn.protocols.http import httptools_impl

from placement_api.db.driver import positional_sql
from placement_api.serving.http_protocol import PlacementHttpProtocol

LOCK_FILE = Path(__file__).resolve().parents[2] / "requirements.lock"
RELIED_ON = (
    "SQLAlchemy",
    "asyncpg",
    "uvicorn",
    "httptools",
    "oslo.policy",
    "fastapi",
    "starlette",
)


def _fail(library: str, change: str, user: str) -> None:
    pytest.fail(
        f"{library} {metadata.version(library)} changed what {user} relies on: {change}. "
        "Adapt that code (or pin the previous version in requirements.lock)."
    )


def _locked_versions() -> dict[str, str]:
    pins = {}
    for line in LOCK_FILE.read_text().splitlines():
        name, separator, version = line.partition("==")
        if separator:
            pins[name.strip().lower()] = version.strip()
    return pins


@pytest.mark.parametrize("library", RELIED_ON)
def test_installed_versions_are_the_locked_ones(library: str) -> None:
    locked = _locked_versions().get(library.lower())
    installed = metadata.version(library)
    assert locked == installed, (
        f"{library} {installed} is installed but requirements.lock pins {locked}: this test "
        "module checks what the fast paths use of it; run it, then update the lock."
    )


def test_sqlalchemy_asyncpg_adapter_keeps_its_transaction_state() -> None:
    adapter = sa_asyncpg.AsyncAdapt_asyncpg_connection
    user = "prepared.begin_transaction (statements sent to asyncpg directly)"
    start = getattr(adapter, "_start_transaction", None)
    if start is None or not inspect.iscoroutinefunction(start):
        _fail("SQLAlchemy", "AsyncAdapt_asyncpg_connection._start_transaction is gone", user)
    if not isinstance(inspect.getattr_static(adapter, "autocommit", None), property):
        _fail(
            "SQLAlchemy", "AsyncAdapt_asyncpg_connection.autocommit is no longer a property", user
        )
    if "self._transaction = None" not in inspect.getsource(adapter.__init__):
        _fail("SQLAlchemy", "the asyncpg adapter no longer keeps its open transaction", user)
    # The adapter itself begins on the first statement exactly as begin_transaction does.
    execute = inspect.getsource(sa_asyncpg.AsyncAdapt_asyncpg_cursor._prepare_and_execute)
    if "adapt_connection._transaction is None" not in execute:
        _fail("SQLAlchemy", "the adapter no longer begins when _transaction is None", user)


def test_sqlalchemy_session_commit_runs_before_commit_listeners_by_dispatch() -> None:
    user = "prepared.commit_on_driver (a COMMIT sent without Session.commit)"
    prepare = inspect.getsource(orm_session.SessionTransaction._prepare_impl)
    if "self.session.dispatch.before_commit(self.session)" not in prepare:
        _fail("SQLAlchemy", "Session.commit no longer runs before_commit through dispatch", user)
    session = orm_session.Session()
    seen: list[orm_session.Session] = []
    event.listen(session, "before_commit", seen.append)
    session.dispatch.before_commit(session)
    if seen != [session]:
        _fail("SQLAlchemy", "Session.dispatch.before_commit no longer calls the listeners", user)


def test_oslo_policy_check_trees_are_as_the_decision_memory_walks_them() -> None:
    user = "policy._pure (which rules' decisions may be remembered)"
    for name in ("TrueCheck", "FalseCheck", "NotCheck", "AndCheck", "OrCheck", "RuleCheck"):
        if not hasattr(_checks, name):
            _fail("oslo.policy", f"oslo_policy._checks.{name} is gone", user)
    if "self.rule = rule" not in inspect.getsource(_checks.NotCheck.__init__):
        _fail("oslo.policy", "NotCheck no longer keeps its operand as .rule", user)
    for combined in (_checks.AndCheck, _checks.OrCheck):
        if "self.rules = list(rules)" not in inspect.getsource(combined.__init__):
            _fail(
                "oslo.policy", f"{combined.__name__} no longer keeps its operands as .rules", user
            )


def test_sqlalchemy_cache_keys_separate_structure_from_values() -> None:
    user = "driver.positional_sql (compiled statements reused by cache key)"
    things = table("things", column("id", Integer), column("size", Integer))
    first = select(things.c.id).where(things.c.size == 5)
    second = select(things.c.id).where(things.c.size == 7)
    first_key, second_key = first._generate_cache_key(), second._generate_cache_key()
    if first_key is None or second_key is None:
        _fail("SQLAlchemy", "_generate_cache_key() gives no key for a plain SELECT", user)
        return
    if first_key.key != second_key.key:
        _fail("SQLAlchemy", "cache keys of statements differing only in values differ", user)
    if [p.value for p in second_key.bindparams] != [7]:
        _fail("SQLAlchemy", "CacheKey.bindparams no longer carries the statement's values", user)
    # compile(cache_key=...) hands the key on to the compiler.
    for name, parameter in (
        ("__init__", "cache_key"),
        ("construct_params", "extracted_parameters"),
        ("construct_params", "escape_names"),
        ("construct_expanded_state", "escape_names"),
    ):
        method = getattr(SQLCompiler, name, None)
        if method is None or parameter not in inspect.signature(method).parameters:
            _fail("SQLAlchemy", f"SQLCompiler.{name}() has no parameter {parameter!r}", user)


def test_positional_sql_puts_each_statements_own_values_in_place() -> None:
    """Behaviour, through the function that relies on it: a statement compiled
    once and reused for another with other values gets those values."""
    dialect = sa_asyncpg.dialect()  # type: ignore[no-untyped-call]
    things = table("things", column("id", Integer), column("size", Integer))
    statement = select(things.c.id).where(things.c.size == 5, things.c.id == bindparam("wanted"))
    kept: dict[object, SQLCompiler] = {}
    sql, arguments = positional_sql(statement, dialect, {"wanted": 1}, kept)
    assert "$1" in sql
    assert arguments == [5, 1]
    other = select(things.c.id).where(things.c.size == 9, things.c.id == bindparam("wanted"))
    assert positional_sql(other, dialect, {"wanted": 2}, kept) == (sql, [9, 2])
    assert len(kept) == 1


def test_uvicorn_httptools_protocol_is_as_the_subclass_expects() -> None:
    user = "placement_api.serving.http_protocol.PlacementHttpProtocol"
    base = httptools_impl.HttpToolsProtocol
    for name in (
        "connection_made",
        "connection_lost",
        "data_received",
        "on_message_begin",
        "on_url",
        "on_header",
        "on_headers_complete",
        "on_message_complete",
        "on_response_complete",
        "_unset_keepalive_if_required",
        "_unsupported_upgrade_warning",
    ):
        ours = getattr(PlacementHttpProtocol, name)
        theirs = getattr(base, name, None)
        if theirs is None:
            _fail("uvicorn", f"HttpToolsProtocol.{name} is gone", user)
        elif len(inspect.signature(theirs).parameters) != len(inspect.signature(ours).parameters):
            _fail("uvicorn", f"HttpToolsProtocol.{name} takes other arguments", user)
    received = inspect.getsource(base.data_received)
    for step in ("self._unset_keepalive_if_required()", "self.parser.feed_data(data)"):
        if step not in received:
            _fail("uvicorn", f"data_received (which ours mirrors) no longer does {step}", user)
    setup = inspect.getsource(base.__init__) + inspect.getsource(base.connection_made)
    for attribute in ("self.parser", "self.cycle", "self.loop", "self.logger", "self.transport"):
        if attribute not in setup:
            _fail("uvicorn", f"HttpToolsProtocol no longer sets {attribute}", user)
    cycle = inspect.getsource(httptools_impl.RequestResponseCycle.__init__)
    for attribute in ("disconnected", "message_event", "response_started", "response_complete"):
        if f"self.{attribute}" not in cycle:
            _fail("uvicorn", f"RequestResponseCycle no longer has {attribute}", user)
    if not issubclass(httptools.HttpParserCallbackError, httptools.HttpParserError):
        _fail("httptools", "a callback's error is no longer an HttpParserError", user)
