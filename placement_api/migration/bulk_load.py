"""Foreign keys checked once after a bulk load instead of row by row.

PostgreSQL checks a foreign key with a trigger per inserted row; for
300,000 allocations that is most of the load's time. Dropping the
constraints inside the load's transaction and adding them back afterwards
(which validates every row in one join) keeps the same guarantee: a row
that points at nothing fails the ADD and rolls the whole load back. The
definitions re-added are read from the database itself, so the schema ends
exactly as its migrations made it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, bindparam, text

FOREIGN_KEYS = text(
    "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
    "WHERE contype = 'f' AND conrelid::regclass::text IN :tables ORDER BY conname"
).bindparams(bindparam("tables", expanding=True))


@contextmanager
def foreign_keys_checked_after(connection: Connection, tables: list[str]) -> Iterator[None]:
    if connection.dialect.name != "postgresql":
        yield
        return
    constraints = connection.execute(FOREIGN_KEYS, {"tables": tables}).tuples().all()
    for table, name, _definition in constraints:
        connection.execute(text(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"'))
    yield
    for table, name, definition in constraints:
        connection.execute(text(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}'))
