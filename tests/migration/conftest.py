"""Our database for a move: the session's database, emptied before and after,
and the command as an operator runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.support import databases


def run_db_command(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    """``placement-api db ARGS`` on our database ``url``."""
    env = dict(os.environ, PLACEMENT_DATABASE_URL=url)
    return subprocess.run(
        [sys.executable, "-m", "placement_api", "db", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture
def ours_url(database_url: str) -> Iterator[str]:
    """Our database, migrated and empty, for an import; emptied again after."""
    databases.empty(database_url)
    yield database_url
    databases.empty(database_url)
