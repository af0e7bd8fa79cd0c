"""The Placement client the agent and the scheduler share: keystoneauth1 credentials,
microversion negotiation, typed errors, retries with jitter."""

from placement_client.auth import AuthOptions, load_adapter
from placement_client.client import MICROVERSION, PlacementClient
from placement_client.errors import (
    AuthenticationFailed,
    BadRequest,
    ConcurrentUpdate,
    Conflict,
    DuplicateName,
    Forbidden,
    InventoryInUse,
    MicroversionUnsupported,
    NotFound,
    PlacementError,
    PlacementUnavailable,
    Unauthorized,
)
from placement_client.microversion import Version
from placement_client.retry import RetryPolicy

__all__ = [
    "MICROVERSION",
    "AuthOptions",
    "AuthenticationFailed",
    "BadRequest",
    "ConcurrentUpdate",
    "Conflict",
    "DuplicateName",
    "Forbidden",
    "InventoryInUse",
    "MicroversionUnsupported",
    "NotFound",
    "PlacementClient",
    "PlacementError",
    "PlacementUnavailable",
    "RetryPolicy",
    "Unauthorized",
    "Version",
    "load_adapter",
]
