"""Setting up prometheus-client's multiprocess mode before anything imports it.

prometheus-client picks its value storage when first imported, so ``serve``
calls this before the app (and any worker) is loaded.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MULTIPROC_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"

# The operator's directory, kept out of the environment until ``serve`` uses it.
_configured: dict[str, str] = {}


def set_aside() -> None:
    """Take ``PROMETHEUS_MULTIPROC_DIR`` out of this process's environment.

    Only ``serve``'s workers may write samples there: another command
    (``audit``, run as root) would leave files the service cannot remove.
    """
    given = os.environ.pop(MULTIPROC_DIR_VARIABLE, None)
    if given:
        _configured[MULTIPROC_DIR_VARIABLE] = given


@contextmanager
def multiprocess_directory() -> Iterator[Path]:
    """The samples directory, emptied of a previous run's files (a dead
    worker's counters would otherwise be summed forever) and exported for
    the workers: ``PROMETHEUS_MULTIPROC_DIR`` if set, else a temporary one,
    removed afterwards."""
    given = _configured.get(MULTIPROC_DIR_VARIABLE) or os.environ.get(MULTIPROC_DIR_VARIABLE)
    if not given:
        with tempfile.TemporaryDirectory(prefix="placement-metrics-") as temporary:
            os.environ[MULTIPROC_DIR_VARIABLE] = temporary
            yield Path(temporary)
        return
    directory = Path(given)
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.db"):
        stale.unlink()
    os.environ[MULTIPROC_DIR_VARIABLE] = str(directory)
    yield directory
