"""A client generated from openapi.yaml drives a live server, errors included."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx

from tests.docs.blocks import ROOT, blocks
from tests.support.server import LiveServer

ADMIN = {"x-auth-token": "admin", "openstack-api-version": "placement latest"}
HOST = "5a8e1c4e-0b0e-4c3a-9a41-2f1f0f6f6c01"
CONSUMER = "9d0c7a52-3f7e-4a8e-b1f4-6c2d1e8a7b10"
AGGREGATE = "1f6e3a55-7a4c-4a39-8c55-1c1f35d2b9e0"


class Sdk:
    """The generated package's operations and models, by name."""

    def __init__(self, package: ModuleType, server: LiveServer) -> None:
        self.package = package
        self.models = importlib.import_module(f"{package.__name__}.models")
        self.client = package.AuthenticatedClient(
            base_url=server.url,
            token="admin",
            prefix="",
            auth_header_name="X-Auth-Token",
            headers={"OpenStack-API-Version": "placement 1.39"},
            raise_on_unexpected_status=True,
        )

    def call(self, tag: str, operation: str, **arguments: Any) -> Any:
        module = importlib.import_module(f"{self.package.__name__}.api.{tag}.{operation}")
        return module.sync(client=self.client, **arguments)

    def model(self, name: str, data: Any) -> Any:
        return getattr(self.models, name).from_dict(data)


def _set_up_a_host(api: Sdk) -> None:
    created = api.call(
        "resource_providers",
        "create_resource_provider",
        body=api.model("ProviderCreateNested", {"name": "compute-1", "uuid": HOST}),
    )
    assert isinstance(created, api.models.Provider)
    inventories = {"VCPU": {"total": 8, "allocation_ratio": 2.0}, "MEMORY_MB": {"total": 16384}}
    replaced = api.call(
        "inventories",
        "replace_inventories",
        uuid=HOST,
        body=api.model(
            "InventoriesReplace",
            {"resource_provider_generation": 0, "inventories": inventories},
        ),
    )
    assert replaced.resource_provider_generation == 1
    assert api.call("traits", "create_trait", name="CUSTOM_FAST_DISK") is None  # 201, no body
    traits = api.call(
        "traits",
        "update_resource_provider_traits",
        uuid=HOST,
        body=api.model(
            "ProviderTraitsUpdate",
            {"traits": ["CUSTOM_FAST_DISK"], "resource_provider_generation": 1},
        ),
    )
    assert traits.traits == ["CUSTOM_FAST_DISK"]
    aggregates = api.call(
        "aggregates",
        "update_resource_provider_aggregates",
        uuid=HOST,
        body=api.model(
            "AggregatesUpdate", {"aggregates": [AGGREGATE], "resource_provider_generation": 2}
        ),
    )
    assert [str(uuid) for uuid in aggregates.aggregates] == [AGGREGATE]


def _claim(api: Sdk) -> None:
    candidates = api.call(
        "allocation_candidates",
        "list_allocation_candidates",
        resources="VCPU:2,MEMORY_MB:4096",
        required="CUSTOM_FAST_DISK",
        member_of=AGGREGATE,
    )
    [request] = candidates.allocation_requests
    allocations = request.allocations.to_dict()
    assert allocations == {HOST: {"resources": {"VCPU": 2, "MEMORY_MB": 4096}}}
    body = {
        "allocations": allocations,
        "consumer_generation": None,
        "consumer_type": "INSTANCE",
        "project_id": "demo",
        "user_id": "alice",
    }
    placed = api.call(
        "allocations",
        "replace_consumer_allocations",
        consumer_uuid=CONSUMER,
        body=api.model("ConsumerAllocations138", body),
    )
    assert placed is None  # 204


def test_generated_client_manages_a_host_and_claims_on_it(
    sdk: ModuleType, server: LiveServer
) -> None:
    api = Sdk(sdk, server)
    _set_up_a_host(api)
    _claim(api)
    usages = api.call("usages", "show_provider_usages", uuid=HOST)
    assert usages.usages.to_dict() == {"VCPU": 2, "MEMORY_MB": 4096}
    totals = api.call("usages", "show_total_usages", project_id="demo")
    assert totals.usages.to_dict()["INSTANCE"]["VCPU"] == 2
    listed = api.call("resource_providers", "list_resource_providers", member_of=AGGREGATE)
    assert [provider.name for provider in listed.resource_providers] == ["compute-1"]
    # What the database holds, read past the client.
    held = httpx.get(f"{server.url}/allocations/{CONSUMER}", headers=ADMIN).json()
    assert held["allocations"][HOST]["resources"] == {"VCPU": 2, "MEMORY_MB": 4096}


def test_a_conflict_and_a_bad_request_arrive_as_typed_errors(
    sdk: ModuleType, server: LiveServer
) -> None:
    api = Sdk(sdk, server)
    _set_up_a_host(api)
    stale = api.call(
        "traits",
        "update_resource_provider_traits",
        uuid=HOST,
        body=api.model("ProviderTraitsUpdate", {"traits": [], "resource_provider_generation": 1}),
    )
    assert isinstance(stale, api.models.PlacementErrors)
    [conflict] = stale.errors
    assert (conflict.status, conflict.code) == (409, "placement.concurrent_update")
    assert conflict.conflict == api.models.PlacementErrorConflict.PROVIDER_GENERATION
    bad = api.call("allocation_candidates", "list_allocation_candidates", resources="VCPU:0")
    assert isinstance(bad, api.models.PlacementErrors)
    assert bad.errors[0].status == 400
    assert "requires amount >= 1" in bad.errors[0].detail
    traits = httpx.get(f"{server.url}/resource_providers/{HOST}/traits", headers=ADMIN).json()
    assert traits["traits"] == ["CUSTOM_FAST_DISK"]  # the stale write changed nothing


def test_the_example_of_docs_sdk_runs_as_written(sdk: ModuleType, server: LiveServer) -> None:
    client_dir = Path(sdk.__file__ or "").parent.parent
    example = blocks(ROOT / "docs" / "sdk.md", "sdk", language="python")
    result = subprocess.run(
        [sys.executable, "-c", example],
        env=dict(os.environ, PLACEMENT_URL=server.url, PYTHONPATH=str(client_dir)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "0 candidates" in result.stdout
    assert "409 placement.concurrent_update" in result.stdout
    listed = httpx.get(f"{server.url}/resource_providers", headers=ADMIN).json()
    assert [p["name"] for p in listed["resource_providers"]] == ["compute-1"]
