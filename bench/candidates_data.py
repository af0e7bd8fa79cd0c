"""Benchmark data for GET /allocation_candidates: generated once, loaded into
our schema and into upstream Placement's schema with COPY.

Hosts look like compute nodes: VCPU 32-128 at ratio 16, MEMORY_MB 64-512 GiB
(2048 reserved) at ratio 1.5, DISK_GB 0.5-4 TB; 20% have HW_CPU_X86_AVX512F,
10% CUSTOM_GPU; they are spread over 10 aggregates. Each host carries one
consumer using part of it. The nested variant gives every host two NUMA
children holding its VCPU and memory, and takes disk from one sharing
provider per aggregate, and adds one "wide" host: eight children with one
PCI_DEVICE each. (The flat variant has no tree at all: upstream Placement
takes a faster code path when no provider has a parent.)
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

import asyncpg

AGGREGATES = 10
WIDE_CHILDREN = 8
CUSTOM_TRAITS = ("CUSTOM_GPU",)


@dataclass
class Inventory:
    provider: int
    resource_class: str
    total: int
    reserved: int = 0
    allocation_ratio: float = 1.0
    used: int = 0

    @property
    def capacity(self) -> int:
        return int((self.total - self.reserved) * self.allocation_ratio)


@dataclass
class Dataset:
    # (id, uuid, name, parent id, root id)
    providers: list[tuple[int, str, str, int | None, int]] = field(default_factory=list)
    inventories: list[Inventory] = field(default_factory=list)
    traits: list[tuple[int, str]] = field(default_factory=list)
    aggregates: list[str] = field(default_factory=list)
    members: list[tuple[int, int]] = field(default_factory=list)  # (provider, aggregate index)
    # (consumer uuid, [(inventory index, amount)])
    consumers: list[tuple[str, list[tuple[int, int]]]] = field(default_factory=list)

    def add_provider(self, name: str, parent: int | None = None) -> int:
        ident = len(self.providers) + 1
        root = ident if parent is None else self.providers[parent - 1][4]
        self.providers.append((ident, str(uuid.uuid4()), name, parent, root))
        return ident

    def add_inventory(self, inventory: Inventory) -> int:
        self.inventories.append(inventory)
        return len(self.inventories) - 1

    def use(self, consumer: list[tuple[int, int]], index: int, fraction: float) -> None:
        amount = int(self.inventories[index].capacity * fraction)
        if amount > 0:
            consumer.append((index, amount))
            self.inventories[index].used += amount


def _compute_shape(rng: random.Random) -> tuple[int, int, int]:
    vcpu = rng.choice((32, 48, 64, 96, 128))
    memory_mb = rng.choice((64, 128, 256, 384, 512)) * 1024
    disk_gb = rng.randrange(500, 4001, 100)
    return vcpu, memory_mb, disk_gb


def _host_traits(data: Dataset, provider: int, rng: random.Random) -> None:
    if rng.random() < 0.2:
        data.traits.append((provider, "HW_CPU_X86_AVX512F"))
    if rng.random() < 0.1:
        data.traits.append((provider, "CUSTOM_GPU"))


def _flat_host(data: Dataset, index: int, rng: random.Random) -> None:
    host = data.add_provider(f"host-{index:05}")
    vcpu, memory_mb, disk_gb = _compute_shape(rng)
    consumer: list[tuple[int, int]] = []
    for inventory in (
        Inventory(host, "VCPU", vcpu, allocation_ratio=16.0),
        Inventory(host, "MEMORY_MB", memory_mb, reserved=2048, allocation_ratio=1.5),
        Inventory(host, "DISK_GB", disk_gb),
    ):
        data.use(consumer, data.add_inventory(inventory), rng.uniform(0.0, 0.7))
    data.consumers.append((str(uuid.uuid4()), consumer))
    data.members.append((host, index % AGGREGATES))
    _host_traits(data, host, rng)


def _nested_host(data: Dataset, index: int, rng: random.Random, shared: list[int]) -> None:
    host = data.add_provider(f"host-{index:05}")
    vcpu, memory_mb, _ = _compute_shape(rng)
    consumer: list[tuple[int, int]] = []
    for numa in (0, 1):
        node = data.add_provider(f"host-{index:05}-numa{numa}", parent=host)
        vcpus = data.add_inventory(Inventory(node, "VCPU", vcpu // 2, allocation_ratio=16.0))
        memory = data.add_inventory(
            Inventory(node, "MEMORY_MB", memory_mb // 2, reserved=1024, allocation_ratio=1.5)
        )
        if numa == 0:
            data.use(consumer, vcpus, rng.uniform(0.0, 0.7))
            data.use(consumer, memory, rng.uniform(0.0, 0.7))
    disk = shared[index % AGGREGATES]
    consumer.append((disk, rng.randrange(10, 200)))
    data.inventories[disk].used += consumer[-1][1]
    data.consumers.append((str(uuid.uuid4()), consumer))
    data.members.append((host, index % AGGREGATES))
    _host_traits(data, host, rng)


def _sharing_providers(data: Dataset) -> list[int]:
    disks = []
    for aggregate in range(AGGREGATES):
        provider = data.add_provider(f"shared-disk-{aggregate}")
        data.traits.append((provider, "MISC_SHARES_VIA_AGGREGATE"))
        data.members.append((provider, aggregate))
        disks.append(data.add_inventory(Inventory(provider, "DISK_GB", 10_000_000)))
    return disks


def _wide_host(data: Dataset) -> None:
    host = data.add_provider("wide-host")
    for child in range(WIDE_CHILDREN):
        device = data.add_provider(f"wide-host-pci{child}", parent=host)
        data.add_inventory(Inventory(device, "PCI_DEVICE", 1))


def generate(hosts: int, *, nested: bool, seed: int = 20240601) -> Dataset:
    rng = random.Random(seed)
    data = Dataset(aggregates=[str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(AGGREGATES)])
    shared = _sharing_providers(data) if nested else []
    for index in range(hosts):
        if nested:
            _nested_host(data, index, rng, shared)
        else:
            _flat_host(data, index, rng)
    if nested:
        _wide_host(data)
    return data


# -- loading ---------------------------------------------------------------


@dataclass(frozen=True)
class Schema:
    """How one database lays the data out."""

    name: str
    inventory_has_used: bool
    allocation_consumer_is_uuid: bool


OURS = Schema("ours", inventory_has_used=True, allocation_consumer_is_uuid=False)
UPSTREAM = Schema("upstream", inventory_has_used=False, allocation_consumer_is_uuid=True)


async def _ids(connection: asyncpg.Connection, table: str) -> dict[str, int]:
    return {
        row["name"]: row["id"] for row in await connection.fetch(f"SELECT id, name FROM {table}")
    }


async def _ensure_custom_traits(connection: asyncpg.Connection, now: datetime) -> dict[str, int]:
    for name in CUSTOM_TRAITS:
        await connection.execute(
            "INSERT INTO traits (name, created_at) SELECT $1::varchar, $2 "
            "WHERE NOT EXISTS (SELECT 1 FROM traits WHERE name = $1::varchar)",
            name,
            now,
        )
    return await _ids(connection, "traits")


async def _copy(
    connection: asyncpg.Connection,
    table: str,
    columns: list[str],
    records: list[tuple[object, ...]],
) -> None:
    await connection.copy_records_to_table(table, records=records, columns=columns)
    if "id" in columns:
        await connection.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
            f"(SELECT coalesce(max(id), 1) FROM {table}))"
        )


async def _load_providers(connection: asyncpg.Connection, data: Dataset, now: datetime) -> None:
    await _copy(
        connection,
        "resource_providers",
        [
            "id",
            "uuid",
            "name",
            "generation",
            "parent_provider_id",
            "root_provider_id",
            "created_at",
        ],
        [(i, u, n, 1, parent, root, now) for i, u, n, parent, root in data.providers],
    )
    await _copy(
        connection,
        "placement_aggregates",
        ["id", "uuid", "created_at"],
        [(index + 1, agg, now) for index, agg in enumerate(data.aggregates)],
    )
    await _copy(
        connection,
        "resource_provider_aggregates",
        ["resource_provider_id", "aggregate_id", "created_at"],
        [(provider, index + 1, now) for provider, index in data.members],
    )


async def _load_inventories(
    connection: asyncpg.Connection, data: Dataset, schema: Schema, now: datetime
) -> None:
    classes = await _ids(connection, "resource_classes")
    traits = await _ensure_custom_traits(connection, now)
    columns = ["id", "resource_provider_id", "resource_class_id", "total", "reserved"]
    columns += ["min_unit", "max_unit", "step_size", "allocation_ratio", "created_at"]
    records: list[tuple[object, ...]] = []
    for index, inv in enumerate(data.inventories):
        record: tuple[object, ...] = (index + 1, inv.provider, classes[inv.resource_class])
        record += (inv.total, inv.reserved, 1, inv.total, 1, inv.allocation_ratio, now)
        records.append(record + ((inv.used,) if schema.inventory_has_used else ()))
    await _copy(
        connection,
        "inventories",
        columns + (["used"] if schema.inventory_has_used else []),
        records,
    )
    await _copy(
        connection,
        "resource_provider_traits",
        ["resource_provider_id", "trait_id", "created_at"],
        [(provider, traits[name], now) for provider, name in data.traits],
    )


async def _load_consumers(
    connection: asyncpg.Connection, data: Dataset, schema: Schema, now: datetime
) -> None:
    classes = await _ids(connection, "resource_classes")
    await _copy(connection, "projects", ["id", "external_id", "created_at"], [(1, "bench", now)])
    await _copy(connection, "users", ["id", "external_id", "created_at"], [(1, "bench", now)])
    await _copy(
        connection,
        "consumers",
        ["id", "uuid", "project_id", "user_id", "generation", "created_at"],
        [(index + 1, consumer, 1, 1, 1, now) for index, (consumer, _) in enumerate(data.consumers)],
    )
    records: list[tuple[object, ...]] = []
    for index, (consumer, uses) in enumerate(data.consumers):
        consumer_ref = consumer if schema.allocation_consumer_is_uuid else index + 1
        for inventory_index, amount in uses:
            inv = data.inventories[inventory_index]
            records.append(
                (
                    len(records) + 1,
                    inv.provider,
                    consumer_ref,
                    classes[inv.resource_class],
                    amount,
                    now,
                )
            )
    await _copy(
        connection,
        "allocations",
        ["id", "resource_provider_id", "consumer_id", "resource_class_id", "used", "created_at"],
        records,
    )


async def load(dsn: str, data: Dataset, schema: Schema) -> None:
    """COPY the dataset into an empty, migrated database."""
    now = datetime.now(UTC).replace(tzinfo=None)
    connection = await asyncpg.connect(dsn)
    try:
        async with connection.transaction():
            await _load_providers(connection, data, now)
            await _load_inventories(connection, data, schema, now)
            await _load_consumers(connection, data, schema, now)
        # As a database in service is: statistics current, visibility map
        # set (else autovacuum does it in the middle of the timing).
        await connection.execute("VACUUM ANALYZE")
    finally:
        await connection.close()
