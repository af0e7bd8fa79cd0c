"""``placement-api usage``: what each project holds across the cloud, per class."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import distinct, func, select

from placement_api.db.engine import create_engine
from placement_api.db.models import Allocation, Consumer, Project, ResourceClass
from placement_api.db.session import unit_of_work
from placement_api.domain.changes import recording_session_factory


@dataclass(frozen=True)
class ProjectUsage:
    project_id: str
    resource_class: str
    used: int
    consumers: int


async def read_usage(database_url: str, project_id: str | None) -> list[ProjectUsage]:
    """Sums of allocations by project and class (one project's, if named)."""
    statement = (
        select(
            Project.external_id,
            ResourceClass.name,
            func.sum(Allocation.used),
            func.count(distinct(Allocation.consumer_id)),
        )
        .select_from(Allocation)
        .join(Consumer, Consumer.id == Allocation.consumer_id)
        .join(Project, Project.id == Consumer.project_id)
        .join(ResourceClass, ResourceClass.id == Allocation.resource_class_id)
        .group_by(Project.external_id, ResourceClass.name)
        .order_by(Project.external_id, ResourceClass.name)
    )
    if project_id is not None:
        statement = statement.where(Project.external_id == project_id)
    engine = create_engine(database_url, pool_size=1)
    try:
        async with unit_of_work(recording_session_factory(engine), write=False) as session:
            rows = await session.execute(statement)
            return [ProjectUsage(p, rc, int(used), int(n)) for p, rc, used, n in rows]
    finally:
        await engine.dispose()
