"""How much one write may name, checked on the decoded body before it is
validated: a body of 500,000 consumers is refused in microseconds, not
after building half a million models."""

from __future__ import annotations

from typing import Any

from placement_api import errors
from placement_api.settings import Settings


def _too_many(count: int, what: str, limit: int, where: str) -> errors.PayloadTooLarge:
    return errors.PayloadTooLarge(
        f"{where} names {count} {what}; at most {limit} are accepted in one request."
    )


def check_consumer_allocations(body: Any, settings: Settings, where: str = "The request") -> None:
    """One consumer's ``allocations`` (a mapping, or a list before 1.12)."""
    allocations = body.get("allocations") if isinstance(body, dict) else None
    limit = settings.max_providers_per_write
    if isinstance(allocations, dict | list) and len(allocations) > limit:
        raise _too_many(len(allocations), "resource providers", limit, where)


def check_consumers(consumers: Any, settings: Settings) -> None:
    """A mapping of consumers to their allocations (POST /allocations, reshaper)."""
    if not isinstance(consumers, dict):
        return
    limit = settings.max_consumers_per_write
    if len(consumers) > limit:
        raise _too_many(len(consumers), "consumers", limit, "The request")
    for uuid, body in consumers.items():
        check_consumer_allocations(body, settings, f"Consumer {uuid}")


def check_reshape(body: Any, settings: Settings) -> None:
    if not isinstance(body, dict):
        return
    inventories = body.get("inventories")
    limit = settings.max_providers_per_write
    if isinstance(inventories, dict) and len(inventories) > limit:
        raise _too_many(len(inventories), "resource providers", limit, "The request")
    check_consumers(body.get("allocations"), settings)
