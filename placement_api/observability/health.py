"""``/healthcheck`` answers, shaped as oslo.middleware's healthcheck shapes them.

A load balancer needs only the status: 200 (HEAD: 204) when this worker can
reach its database within the timeout, 503 otherwise. The body names the
reason, as text/plain by default or JSON when the Accept header prefers it;
the detailed JSON form (database latency, versions, time) is for admins.
"""

from __future__ import annotations

import asyncio
import gc
import json
import platform
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

OK_REASON = "OK"
DISABLED_REASON = "DISABLED BY FILE"

_OFFERS = ("text/plain", "application/json")


@dataclass(frozen=True)
class CheckResult:
    available: bool
    reason: str
    details: str
    check: str


async def check_database(engine: AsyncEngine, seconds: float) -> CheckResult:
    """One cheap round trip, bounded by ``seconds`` (a full pool waits too)."""
    started = time.perf_counter()
    try:
        async with asyncio.timeout(seconds):
            async with engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
    except TimeoutError:
        return CheckResult(
            False, "database unavailable", f"no answer within {seconds:g}s", "DatabaseCheck"
        )
    except Exception as exc:
        return CheckResult(False, "database unavailable", _one_line(exc), "DatabaseCheck")
    elapsed_ms = (time.perf_counter() - started) * 1000
    return CheckResult(
        True, OK_REASON, f"database answered in {elapsed_ms:.1f} ms", "DatabaseCheck"
    )


def check_disable_file(path: Path | None) -> CheckResult | None:
    """Operators take a worker out of a balancer's rotation by creating this file."""
    if path is None:
        return None
    if path.exists():
        return CheckResult(False, DISABLED_REASON, str(path), "DisableByFileCheck")
    return CheckResult(True, OK_REASON, f"{path} absent", "DisableByFileCheck")


def _one_line(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {first[0] if first else ''}"


def preferred_media_type(accept: str | None) -> str:
    """The best of text/plain and application/json for ``accept``; text/plain
    when neither is acceptable (an error from a health check helps nobody)."""
    if not accept:
        return _OFFERS[0]
    best, best_quality = _OFFERS[0], 0.0
    for part in accept.split(","):
        media, *params = (item.strip().lower() for item in part.split(";"))
        quality = _quality(params)
        for offer in _OFFERS:
            if _matches(media, offer) and quality > best_quality:
                best, best_quality = offer, quality
    return best


def _quality(params: list[str]) -> float:
    for param in params:
        if param.startswith("q="):
            try:
                return float(param[2:])
            except ValueError:
                return 0.0
    return 1.0


def _matches(media: str, offer: str) -> bool:
    if media in ("*/*", offer):
        return True
    return media.endswith("/*") and offer.startswith(media[:-1])


def render_body(results: list[CheckResult], media_type: str, *, detailed: bool) -> str:
    if media_type == "application/json":
        return json.dumps(_json_document(results, detailed=detailed), indent=4, sort_keys=True)
    return "\n".join(result.reason for result in results)


def _json_document(results: list[CheckResult], *, detailed: bool) -> dict[str, object]:
    if not detailed:
        return {"detailed": False, "reasons": [result.reason for result in results]}
    return {
        "detailed": True,
        "now": str(datetime.now(UTC)),
        "python_version": sys.version,
        "platform": platform.platform(),
        "gc": {"counts": gc.get_count(), "threshold": gc.get_threshold()},
        "reasons": [
            {"reason": result.reason, "details": result.details, "class": result.check}
            for result in results
        ],
    }
