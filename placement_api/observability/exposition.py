"""The Prometheus page: the process's metrics, the inventory figures read now
and the capacity gauges, for ``GET /metrics`` on either port."""

from __future__ import annotations

from starlette.responses import Response

from placement_api.db.session import SessionFactory, unit_of_work
from placement_api.domain.inventory_figures import inventory_figures
from placement_api.observability import metrics
from placement_api.observability.capacity_gauges import CapacityGauges


async def metrics_response(factory: SessionFactory, gauges: CapacityGauges) -> Response:
    async with unit_of_work(factory, write=False) as session:
        rows = await inventory_figures(session)
    body, content_type = metrics.exposition(rows, await gauges.collector(factory))
    return Response(body, media_type=content_type)
