"""The standard resource classes and traits written before anything uses them.

The API does it as it starts; an operator command that names classes or traits
(``capacity``, ``host disable``) does it too, as a database ``db upgrade``
made may not have met a server yet. A standby refuses the write: its primary
wrote them (or will, when a server starts on it), so that is no failure.
"""

from __future__ import annotations

from placement_api.db.outage import is_read_only
from placement_api.db.session import SessionFactory, unit_of_work
from placement_api.domain.standard_names import sync_standard_names


async def write_standard_names(factory: SessionFactory) -> bool:
    """Add the missing standard names in a transaction of their own; False when
    the database is read-only (a standby) and wrote nothing."""
    try:
        async with unit_of_work(factory, write=True) as session:
            await sync_standard_names(session)
    except Exception as exc:
        if not is_read_only(exc):
            raise
        return False
    return True
