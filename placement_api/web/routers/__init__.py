"""One router per resource; ``ROUTERS`` is the order the app mounts them in."""

from fastapi import APIRouter

from placement_api.web.routers import (
    aggregates,
    allocation_candidates,
    allocations,
    capacity,
    changes,
    heartbeats,
    inventories,
    reshaper,
    resource_classes,
    resource_providers,
    root,
    server_groups,
    traits,
    usages,
)

ROUTERS: list[APIRouter] = [
    root.router,
    resource_providers.router,
    inventories.router,
    aggregates.router,
    traits.router,
    resource_classes.router,
    usages.router,
    allocations.router,
    allocation_candidates.router,
    reshaper.router,
    changes.router,
    capacity.router,
    heartbeats.router,
    server_groups.router,
]
