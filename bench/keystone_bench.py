"""What Keystone token validation costs the hot paths: candidates and claims.

One PostgreSQL database, two servers of the same code on it: one with
``noauth2``, one with ``keystone`` (keystonemiddleware's auth_token against
a real Keystone started by the test fixture's code, ``tests/support/
keystone.py``). The keystone server is asked with one service token, so after
the first request every validation is a hit in keystonemiddleware's
in-process token cache: this measures the cached path, what a busy cloud
sees. Each server takes turns of ``--reps`` requests per query, back to back,
for ``--rounds`` rounds; reported: median and p95 per query and server, and
the keystone/noauth2 ratio of the medians. Also reported: what one cached
validation costs in process (wall and CPU time, steadier than the HTTP
medians on a busy machine) and the size of one validated token's data,
which is what one cache entry holds.

    python bench/keystone_bench.py                  # about two minutes
    python bench/keystone_bench.py --hosts 2000 --reps 100 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
import candidates_servers as servers  # noqa: E402

from tests.support.keystone import Keystone, User, running_keystone  # noqa: E402

VERSION = {"openstack-api-version": "placement 1.39", "accept": "application/json"}
CANDIDATES = "/allocation_candidates?resources=VCPU:1,MEMORY_MB:1024&limit=10"


@dataclass
class Result:
    query: str
    strategy: str
    requests: int
    median_ms: float
    p95_ms: float


def _conf(directory: Path, keystone: Keystone, user: User) -> Path:
    options = keystone.authtoken_options(user)
    path = directory / "placement.conf"
    path.write_text(
        "[api]\nauth_strategy = keystone\n[keystone_authtoken]\n"
        + "".join(f"{key} = {value}\n" for key, value in options.items())
    )
    return path


@contextmanager
def _server(url: str, log: Path, **env: str) -> Iterator[str]:
    environment = dict(os.environ, PLACEMENT_DATABASE_URL=url, **env)
    command = [sys.executable, "-m", "placement_api", "serve", "--port", "{port}"]
    with servers.running([*command, "--log-level", "warning"], environment, log) as base:
        yield base


def _load(client: httpx.Client, hosts: int) -> list[str]:
    uuids = []
    for number in range(hosts):
        made = client.post("/resource_providers", json={"name": f"host-{number}"})
        made.raise_for_status()
        provider = made.json()
        inventories = {
            "VCPU": {"total": 10_000},
            "MEMORY_MB": {"total": 10_000_000},
            "DISK_GB": {"total": 100_000},
        }
        client.put(
            f"/resource_providers/{provider['uuid']}/inventories",
            json={
                "resource_provider_generation": provider["generation"],
                "inventories": inventories,
            },
        ).raise_for_status()
        uuids.append(provider["uuid"])
    return uuids


def _claim(hosts: list[str]) -> Callable[[httpx.Client], httpx.Response]:
    turn = iter(range(10**9))

    def claim(client: httpx.Client) -> httpx.Response:
        host = hosts[next(turn) % len(hosts)]
        body = {
            "allocations": {host: {"resources": {"VCPU": 1, "MEMORY_MB": 1024}}},
            "project_id": uuid.uuid4().hex,
            "user_id": uuid.uuid4().hex,
            "consumer_generation": None,
            "consumer_type": "INSTANCE",
        }
        return client.put(f"/allocations/{uuid.uuid4()}", json=body)

    return claim


def _timed(
    client: httpx.Client, send: Callable[[httpx.Client], httpx.Response], n: int
) -> list[float]:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        response = send(client)
        times.append((time.perf_counter() - started) * 1000)
        if response.status_code >= 300:
            raise RuntimeError(f"{response.request.url}: {response.status_code} {response.text}")
    return times


def measure(
    clients: dict[str, httpx.Client], hosts: list[str], reps: int, rounds: int
) -> list[Result]:
    queries: dict[str, Callable[[httpx.Client], httpx.Response]] = {
        "candidates": lambda client: client.get(CANDIDATES),
        "claim (PUT /allocations)": _claim(hosts),
    }
    samples: dict[tuple[str, str], list[float]] = {}
    for query, send in queries.items():
        for client in clients.values():
            _timed(client, send, max(5, reps // 5))  # warm-up: connections, caches
        for _ in range(rounds):
            for strategy, client in clients.items():
                samples.setdefault((query, strategy), []).extend(_timed(client, send, reps))
    return [
        Result(
            query=query,
            strategy=strategy,
            requests=len(times),
            median_ms=statistics.median(times),
            p95_ms=statistics.quantiles(times, n=20)[-1],
        )
        for (query, strategy), times in samples.items()
    ]


def validation_cost(conf: Path, token: str, calls: int = 1000) -> tuple[float, float]:
    """Median wall and mean CPU microseconds of one cached validation, in process."""
    from placement_api.auth.keystone import KeystoneAuthenticator

    authenticator = KeystoneAuthenticator(conf, timeout=30)

    async def measure() -> tuple[float, float]:
        headers = {"x-auth-token": token}
        await authenticator.authenticate(headers, "req-warm-up")
        walls = []
        cpu_started = time.process_time()
        for _ in range(calls):
            started = time.perf_counter()
            await authenticator.authenticate(headers, "req-bench")
            walls.append((time.perf_counter() - started) * 1e6)
        cpu = (time.process_time() - cpu_started) * 1e6 / calls
        return statistics.median(walls), cpu

    try:
        return asyncio.run(measure())
    finally:
        authenticator.close()


def markdown(results: list[Result], hosts: int, entry_bytes: int, cost: tuple[float, float]) -> str:
    lines = [
        f"# Keystone auth vs noauth2, {hosts} hosts (cached service token)",
        "",
        "| query | noauth2 median ms | keystone median ms | ratio | noauth2 p95 | keystone p95 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    by_query: dict[str, dict[str, Result]] = {}
    for result in results:
        by_query.setdefault(result.query, {})[result.strategy] = result
    for query, pair in by_query.items():
        plain, keyed = pair["noauth2"], pair["keystone"]
        lines.append(
            f"| {query} | {plain.median_ms:.2f} | {keyed.median_ms:.2f} | "
            f"{keyed.median_ms / plain.median_ms:.2f} | {plain.p95_ms:.2f} | {keyed.p95_ms:.2f} |"
        )
    lines += [
        "",
        f"One cached validation in process (auth_token in a worker thread): median "
        f"{cost[0]:.0f} us wall, {cost[1]:.0f} us CPU.",
        f"One cached token (keystonemiddleware's cache entry): {entry_bytes} bytes of JSON.",
    ]
    return "\n".join(lines) + "\n"


def _token_data_size(keystone: Keystone, token: str) -> int:
    response = httpx.get(
        f"{keystone.url}/auth/tokens",
        headers={"x-auth-token": keystone.admin_token(), "x-subject-token": token},
    )
    response.raise_for_status()
    return len(response.content)


def run(args: argparse.Namespace) -> str:
    database = f"placement_bench_keystone_{uuid.uuid4().hex[:8]}"
    url = servers.prepare_ours(args.pg_url, database)
    work = Path(tempfile.mkdtemp(prefix="keystone-bench-"))
    try:
        with running_keystone() as keystone, ExitStack() as stack:
            service = keystone.service_user()
            token = keystone.token(service, service.project_id)
            conf = _conf(work, keystone, service)
            plain = stack.enter_context(
                _server(url, work / "noauth2.log", PLACEMENT_AUTH_STRATEGY="noauth2")
            )
            keyed = stack.enter_context(
                _server(
                    url,
                    work / "keystone.log",
                    PLACEMENT_AUTH_STRATEGY="keystone",
                    PLACEMENT_CONFIG_FILE=str(conf),
                )
            )
            clients = {
                "noauth2": stack.enter_context(
                    httpx.Client(base_url=plain, headers={**VERSION, "x-auth-token": "admin"})
                ),
                "keystone": stack.enter_context(
                    httpx.Client(
                        base_url=keyed, headers={**VERSION, "x-auth-token": token}, timeout=30
                    )
                ),
            }
            hosts = _load(clients["noauth2"], args.hosts)
            results = measure(clients, hosts, args.reps, args.rounds)
            cost = validation_cost(conf, token)
            report = markdown(results, args.hosts, _token_data_size(keystone, token), cost)
    finally:
        asyncio.run(servers.drop_database(args.pg_url, database))
    args.out_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (args.out_dir / f"keystone-{stamp}.md").write_text(report)
    (args.out_dir / f"keystone-{stamp}.json").write_text(
        json.dumps([asdict(result) for result in results], indent=2)
    )
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=500)
    parser.add_argument("--reps", type=int, default=50, help="requests per turn")
    parser.add_argument("--rounds", type=int, default=4, help="turns each server takes per query")
    servers.add_pg_url_option(parser)
    parser.add_argument("--out-dir", type=Path, default=ROOT / "var" / "bench")
    print(run(parser.parse_args()))


if __name__ == "__main__":
    main()
