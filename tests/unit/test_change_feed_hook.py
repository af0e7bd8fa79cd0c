"""The change feed's append runs on the sessions of the recording factory only:
it is installed on that factory's own session class, not on every SQLAlchemy
session (a plain factory, or another library's sessions, append nothing)."""

from __future__ import annotations

from sqlalchemy import event
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.orm import Session

from placement_api.db.session import make_session_factory
from placement_api.domain.changes import append_pending, recording_session_factory


async def test_the_append_listens_on_the_recording_factorys_sessions_only() -> None:
    engine = create_async_engine("sqlite+aiosqlite://")
    try:
        recording = recording_session_factory(engine)
        plain = make_session_factory(engine)
        assert event.contains(recording.kw["sync_session_class"], "before_commit", append_pending)
        assert not event.contains(plain.kw["sync_session_class"], "before_commit", append_pending)
        assert not event.contains(Session, "before_commit", append_pending)
        async with recording() as session:
            assert session.sync_session.dispatch.before_commit
        async with plain() as session:
            assert not session.sync_session.dispatch.before_commit
    finally:
        await engine.dispose()
