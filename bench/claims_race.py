"""Racing for the last room: the claims benchmark's ``race`` section.

Each round, on each server: ``providers`` new providers of 10 VCPU, 9 of
each taken by one consumer, then ``clients`` new consumers at once, each
claiming 1 VCPU of every one of them (``PUT /allocations``). Exactly one
claim fits. Afterwards each provider's usage is read back. A server that
checks capacity and writes without holding the providers grants the room
more than once; one that serialises its writers never does.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.lean_http import Connection

CAPACITY = 10


@dataclass
class RaceTally:
    """One server's rounds."""

    rounds: int = 0
    granted: int = 0
    refused: int = 0
    other: Counter[int] = field(default_factory=Counter)
    overgranted_rounds: int = 0
    # Providers left with usage above their capacity.
    over_capacity: int = 0

    def summary(self, server: str) -> dict[str, Any]:
        return {"section": "last room race", "server": server, **asdict(self)}


def _body(allocations: dict[str, int]) -> bytes:
    return json.dumps(
        {
            "allocations": {rp: {"resources": {"VCPU": n}} for rp, n in allocations.items()},
            "project_id": "bench",
            "user_id": "bench",
            "consumer_generation": None,
            "consumer_type": "INSTANCE",
        }
    ).encode()


async def _expect(connection: Connection, method: str, path: str, body: Any, status: int) -> bytes:
    answered, content = await connection.request(method, path, json.dumps(body).encode())
    if answered != status:
        raise RuntimeError(f"{method} {path}: {answered} {content[:300]!r}")
    return content


async def _nearly_full_providers(connection: Connection, count: int) -> list[str]:
    providers = [str(uuid.uuid4()) for _ in range(count)]
    for rp in providers:
        await _expect(
            connection, "POST", "/resource_providers", {"name": f"race-{rp}", "uuid": rp}, 200
        )
        inventory = {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 10}}}
        await _expect(connection, "PUT", f"/resource_providers/{rp}/inventories", inventory, 200)
    filler = _body(dict.fromkeys(providers, CAPACITY - 1))
    status, content = await connection.request("PUT", f"/allocations/{uuid.uuid4()}", filler)
    if status != 204:
        raise RuntimeError(f"filling the providers: {status} {content[:300]!r}")
    return providers


async def race(
    url: str, headers: dict[str, str], keep_alive: bool, rounds: int, providers: int, clients: int
) -> RaceTally:
    tally = RaceTally()
    setup = Connection(url, headers, keep_alive=keep_alive)
    racers = [Connection(url, headers, keep_alive=keep_alive) for _ in range(clients)]
    try:
        for _ in range(rounds):
            rps = await _nearly_full_providers(setup, providers)
            claim = _body(dict.fromkeys(rps, 1))
            answers = await asyncio.gather(
                *(c.request("PUT", f"/allocations/{uuid.uuid4()}", claim) for c in racers)
            )
            statuses = Counter(status for status, _ in answers)
            granted = statuses.pop(204, 0)
            tally.rounds += 1
            tally.granted += granted
            tally.overgranted_rounds += granted > 1
            tally.refused += statuses.pop(409, 0)
            tally.other.update(statuses)
            for rp in rps:
                _, content = await setup.request("GET", f"/resource_providers/{rp}/usages")
                tally.over_capacity += json.loads(content)["usages"].get("VCPU", 0) > CAPACITY
    finally:
        for connection in (setup, *racers):
            await connection.close()
    return tally


def markdown(tallies: dict[str, RaceTally], providers: int, clients: int) -> str:
    lines = [
        f"Racing for the last room: per round, {providers} providers with 1 VCPU of "
        f"{CAPACITY} free, {clients} clients each claiming 1 VCPU of every one at once "
        "(one claim fits).",
        "",
        "| server | rounds | claims granted | refused (409) | other answers "
        "| rounds granting more than one | providers over capacity |",
        "|---|---:|---:|---:|---|---:|---:|",
    ]
    for server, tally in tallies.items():
        other = " ".join(f"{status}:{n}" for status, n in sorted(tally.other.items())) or "-"
        lines.append(
            f"| {server} | {tally.rounds} | {tally.granted} | {tally.refused} | {other} "
            f"| {tally.overgranted_rounds} | {tally.over_capacity} |"
        )
    return "\n".join(lines) + "\n"
