"""The Prometheus page: the process's metrics, the inventory figures read now
and the capacity gauges, for ``GET /metrics`` on either port.

``openstack_placement_up`` is 1 when the inventory figures were read within
the database check's time (``PLACEMENT_HEALTHCHECK_TIMEOUT``), 0 when the
database refused, failed or was slower (any driver error: a database that
was dropped or refuses connections is as down as a stopped one). The page
is still a 200 then, with the process's metrics and no capacity, so
openstack-exporter's "Placement is down" alert (``openstack_placement_up ==
0``) fires rather than a scrape error.
"""

from __future__ import annotations

import asyncio
import logging

from prometheus_client.registry import Collector
from sqlalchemy import exc as sa_exc
from starlette.responses import Response

from placement_api.db.session import SessionFactory, unit_of_work
from placement_api.domain.inventory_figures import InventoryFigures, inventory_figures
from placement_api.observability import metrics
from placement_api.observability.capacity_gauges import CapacityGauges

LOG = logging.getLogger(__name__)


async def metrics_response(
    factory: SessionFactory, gauges: CapacityGauges, database_timeout: float
) -> Response:
    try:
        async with asyncio.timeout(database_timeout):
            rows = await _figures(factory)
        extra: list[Collector] = [await gauges.collector(factory)]
    except (TimeoutError, sa_exc.DBAPIError, OSError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        LOG.warning("metrics: the database did not answer (openstack_placement_up 0): %s", reason)
        body, content_type = metrics.exposition([], up=False)
        return Response(body, media_type=content_type)
    body, content_type = metrics.exposition(rows, *extra, up=True)
    return Response(body, media_type=content_type)


async def _figures(factory: SessionFactory) -> list[InventoryFigures]:
    async with unit_of_work(factory, write=False) as session:
        return await inventory_figures(session)
