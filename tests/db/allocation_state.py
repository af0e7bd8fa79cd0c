"""Direct looks at (and operator-style edits of) the stored allocation state.

Used by the allocation tests to prove invariants the API cannot show on its
own, and to reach states an operator can reach (an inventory lowered below
what is already allocated) without depending on how the inventory API treats
such a write.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from placement_api.db.engine import create_engine
from placement_api.settings import Settings


async def _rows(settings: Settings, sql: str, **params: Any) -> list[tuple[Any, ...]]:
    engine = create_engine(settings.database_url)
    try:
        async with engine.begin() as connection:
            result = await connection.execute(text(sql), params)
            return [tuple(row) for row in result] if result.returns_rows else []
    finally:
        await engine.dispose()


async def usage_drift(settings: Settings) -> list[tuple[Any, ...]]:
    """Inventories whose ``used`` differs from the sum of their allocations (should be none)."""
    return await _rows(
        settings,
        "SELECT i.resource_provider_id, i.resource_class_id, i.used, "
        "COALESCE(SUM(a.used), 0) AS allocated FROM inventories i "
        "LEFT JOIN allocations a ON a.resource_provider_id = i.resource_provider_id "
        "AND a.resource_class_id = i.resource_class_id "
        "GROUP BY i.id, i.resource_provider_id, i.resource_class_id, i.used "
        "HAVING i.used <> COALESCE(SUM(a.used), 0)",
    )


async def orphan_allocations(settings: Settings) -> list[tuple[Any, ...]]:
    """Allocations without a provider, a consumer, a class, or an inventory to
    draw on (should be none: no foreign key keeps them out, the write path's
    locks do)."""
    return await _rows(
        settings,
        "SELECT a.id FROM allocations a "
        "LEFT JOIN resource_providers p ON p.id = a.resource_provider_id "
        "LEFT JOIN consumers c ON c.id = a.consumer_id "
        "LEFT JOIN resource_classes rc ON rc.id = a.resource_class_id "
        "LEFT JOIN inventories i ON i.resource_provider_id = a.resource_provider_id "
        "AND i.resource_class_id = a.resource_class_id "
        "WHERE p.id IS NULL OR c.id IS NULL OR rc.id IS NULL OR i.id IS NULL",
    )


async def consumers_without_owners(settings: Settings) -> list[tuple[Any, ...]]:
    """Consumers whose project, user or type is missing (should be none)."""
    return await _rows(
        settings,
        "SELECT c.uuid FROM consumers c "
        "LEFT JOIN projects p ON p.id = c.project_id "
        "LEFT JOIN users u ON u.id = c.user_id "
        "LEFT JOIN consumer_types t ON t.id = c.consumer_type_id "
        "WHERE p.id IS NULL OR u.id IS NULL OR (c.consumer_type_id IS NOT NULL AND t.id IS NULL)",
    )


async def consumers_without_allocations(settings: Settings) -> list[tuple[Any, ...]]:
    return await _rows(
        settings,
        "SELECT c.uuid FROM consumers c "
        "WHERE NOT EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = c.id)",
    )


async def set_allocation_ratio(
    settings: Settings, provider_uuid: str, resource_class: str, ratio: float
) -> None:
    """What an operator's ratio change leaves behind, whatever the usage."""
    await _rows(
        settings,
        "UPDATE inventories SET allocation_ratio = :ratio "
        "WHERE resource_provider_id = (SELECT id FROM resource_providers WHERE uuid = :uuid) "
        "AND resource_class_id = (SELECT id FROM resource_classes WHERE name = :rc)",
        ratio=ratio,
        uuid=provider_uuid,
        rc=resource_class,
    )
