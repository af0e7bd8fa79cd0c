"""Standard resource classes and traits, synced from os-resource-classes and os-traits."""

from __future__ import annotations

import os_resource_classes
import os_traits
from sqlalchemy.ext.asyncio import AsyncSession

from placement_api.db.dialect import insert_ignoring_duplicates
from placement_api.db.models import ResourceClass, Trait

CUSTOM_PREFIX = "CUSTOM_"


def standard_resource_classes() -> list[str]:
    return list(os_resource_classes.STANDARDS)


def standard_traits() -> list[str]:
    return list(os_traits.get_traits())


def is_standard_resource_class(name: str) -> bool:
    return name in os_resource_classes.STANDARDS


async def sync_standard_names(session: AsyncSession) -> None:
    """Make sure every standard class and trait has a row; idempotent and race-safe."""
    await insert_ignoring_duplicates(
        session,
        ResourceClass.__table__,  # type: ignore[arg-type]
        [{"name": name} for name in standard_resource_classes()],
    )
    await insert_ignoring_duplicates(
        session,
        Trait.__table__,  # type: ignore[arg-type]
        [{"name": name} for name in standard_traits()],
    )
