"""One request's scheduling cycle, as the Kubernetes framework's PreFilter and CycleState.

Before Placement is asked, every enabled plugin's ``prepare`` hook runs with
the request's ``Cycle``: it reads what it needs (through ``PlacementFacts``)
into the cycle's ``CycleState`` under its own typed keys, may narrow the
candidates query (``QueryTerms``: ``member_of`` / ``in_tree``, as Nova's
request filters do, so ``limit`` cannot hide a matching host), or refuse the
request. Each time candidates are read, ``prepare_hosts`` may add per-host
facts. Verdicts and weights then read the state, so a new plugin needs no
change to the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, NoReturn, TypeVar

if TYPE_CHECKING:
    from scheduler.placement.facts import PlacementFacts
    from scheduler.request.spec import ScheduleRequest
    from scheduler.settings import SchedulerSettings

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class RequestRefused(Exception):
    """A prepare hook found that nothing can satisfy the request."""


@dataclass(frozen=True, eq=False)
class StateKey(Generic[T_co]):
    """A typed slot of a ``CycleState``; a plugin module owns its keys (each key is
    its own slot, whatever its name: the name is for messages)."""

    name: str


class CycleState:
    """What the prepare hooks of one request read, for its verdicts and weights."""

    def __init__(self) -> None:
        self._values: dict[StateKey[Any], Any] = {}

    def write(self, key: StateKey[T], value: T) -> None:
        self._values[key] = value

    def read(self, key: StateKey[T]) -> T:
        try:
            value: T = self._values[key]
        except KeyError:
            raise LookupError(f"nothing was prepared under {key.name!r}") from None
        return value

    def get(self, key: StateKey[T]) -> T | None:
        found: T | None = self._values.get(key)
        return found

    def __contains__(self, key: StateKey[Any]) -> bool:
        return key in self._values


@dataclass
class QueryTerms:
    """Terms prepare hooks add to the unnumbered group of the candidates query."""

    member_of: list[tuple[str, ...]] = field(default_factory=list)
    not_member_of: set[str] = field(default_factory=set)
    in_tree: str | None = None
    unlimited: bool = False  # no ``limit``: the answer must hold every match
    why: list[str] = field(default_factory=list)  # one line per term, for the explanation


@dataclass
class Cycle:
    spec: ScheduleRequest
    settings: SchedulerSettings
    facts: PlacementFacts
    state: CycleState = field(default_factory=CycleState)
    terms: QueryTerms = field(default_factory=QueryTerms)

    def refuse(self, reason: str) -> NoReturn:
        """Nothing can satisfy the request: fail it before Placement is asked."""
        raise RequestRefused(reason)
