"""What is kept for an engine's lifetime: statements built or compiled once
by their structure, and whatever else is read once per database. One
``EngineCaches`` per engine, gone with it; nothing is kept per process."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, TypeVar, cast

from sqlalchemy.engine import Engine
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.util import LRUCache

T = TypeVar("T")


class EngineCaches:
    """``compiled``: the direct driver's compiled statements by cache key.
    Other holders are made by their owner's factory on first use (``own``),
    so the db layer need not know what the domain keeps."""

    def __init__(self) -> None:
        # Candidate statements come in a few dozen structures (one per
        # combination of classes, traits and scopes asked for), and compiling
        # one costs more than running it.
        self.compiled: LRUCache[object, SQLCompiler] = LRUCache(512)
        self._owned: dict[Callable[[], Any], Any] = {}

    def own(self, make: Callable[[], T]) -> T:
        """The holder ``make`` made for this engine, made now if not yet."""
        found = self._owned.get(make)
        if found is None:
            found = self._owned[make] = make()
        return cast(T, found)


_CACHES: weakref.WeakKeyDictionary[Engine, EngineCaches] = weakref.WeakKeyDictionary()


def caches_of(engine: Engine) -> EngineCaches:
    """The engine's caches (``session.get_bind()`` or a connection's ``sync_engine``)."""
    found = _CACHES.get(engine)
    if found is None:
        found = _CACHES[engine] = EngineCaches()
    return found
