"""Connections opened beside the engine's pool (the change feed's LISTEN and
NOTIFY) with exactly the engine's view of the database URL.

A multi-host URL (``?host=h1:5432&host=h2:5432&target_session_attrs=read-write``)
is read by SQLAlchemy's asyncpg dialect into lists of hosts and ports and
the session attribute asyncpg should look for; rendering the URL back into
a libpq DSN instead keeps only the last ``host``, so a connection of our own
could land on a standby the engine never uses. Asking the dialect gives the
very arguments the pool's connections get.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import URL, make_url


def connect_arguments(url: URL | str, *, timeout: float) -> dict[str, Any]:
    """Keyword arguments for ``asyncpg.connect`` reaching what the engine's
    pool reaches for ``url`` (every host, port and ``target_session_attrs``),
    with ``timeout`` seconds to connect."""
    parsed = make_url(url) if isinstance(url, str) else url
    dialect = parsed.get_dialect()
    _args, arguments = dialect().create_connect_args(parsed)
    # The dialect's own options, not asyncpg's (SQLAlchemy's prepared-statement cache).
    arguments = {
        key: value for key, value in arguments.items() if not key.startswith("prepared_statement")
    }
    arguments["timeout"] = timeout
    return arguments
