"""openapi.yaml is generated from the app, valid, and current."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from openapi_spec_validator import validate

from placement_api.microversion import FEATURES
from placement_api.openapi.document import (
    UNAUTHENTICATED_PATHS,
    openapi_document,
    render_openapi_yaml,
)
from placement_api.openapi.errors import CONFLICTS
from placement_api.openapi.versions import CHANGES, INTRODUCED, described_features
from tests.support.client import PlacementClient

CHECKED_IN = Path(__file__).resolve().parents[2] / "openapi.yaml"


def test_checked_in_document_is_current() -> None:
    assert CHECKED_IN.read_text() == render_openapi_yaml(), "run `make openapi`"


def test_document_is_valid_openapi() -> None:
    validate(yaml.safe_load(CHECKED_IN.read_text()))


def test_every_operation_has_a_stable_id_and_the_microversion_header() -> None:
    document = openapi_document()
    ids = []
    for operations in document["paths"].values():
        for operation in operations.values():
            ids.append(operation["operationId"])
            refs = [p.get("$ref") for p in operation["parameters"]]
            assert "#/components/parameters/microversion" in refs
    assert len(ids) == len(set(ids))


def _operations() -> list[tuple[str, str, dict[str, Any]]]:
    document = openapi_document()
    return [
        (path, method, operation)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
    ]


def test_every_client_error_is_the_placement_envelope_and_never_fastapis_422() -> None:
    for path, method, operation in _operations():
        assert "422" not in operation["responses"], (method, path)
        errors = {s: r for s, r in operation["responses"].items() if s.startswith("4")}
        if path not in UNAUTHENTICATED_PATHS:
            assert {"400", "401", "403", "406"} <= errors.keys(), (method, path)
        for response in errors.values():
            schema = response["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/PlacementErrors"}
    schemas = openapi_document()["components"]["schemas"]
    assert "HTTPValidationError" not in schemas


def test_routes_that_answer_without_a_body_document_none() -> None:
    responses = {op["operationId"]: op["responses"] for _, _, op in _operations()}
    assert "content" not in responses["createResourceClass"]["201"]
    assert "Location" in responses["createResourceClass"]["201"]["headers"]
    assert "content" not in responses["createTrait"]["201"]
    assert "content" not in responses["createResourceProvider"]["201"]
    assert "content" in responses["createResourceProvider"]["200"]


def test_every_filter_of_the_list_routes_is_a_documented_query_parameter() -> None:
    documented = {
        op["operationId"]: {p["name"]: p for p in op["parameters"] if p.get("in") == "query"}
        for _, _, op in _operations()
    }
    assert documented["listResourceProviders"].keys() == {
        "name", "uuid", "member_of", "resources", "in_tree", "required"
    }  # fmt: skip
    assert documented["showTotalUsages"].keys() == {"project_id", "user_id", "consumer_type"}
    assert documented["showTotalUsages"]["project_id"]["required"] is True
    assert documented["listAllocationCandidates"].keys() == {
        "resources", "limit", "required", "member_of", "group_policy", "in_tree",
        "root_required", "same_subtree",
    }  # fmt: skip
    assert "From 1.18" in documented["listResourceProviders"]["required"]["description"]
    assert documented["listTraits"].keys() == {"name", "associated"}


def test_every_microversion_feature_is_described_for_some_operation() -> None:
    assert described_features() == set(FEATURES)
    operation_ids = {op["operationId"] for _, _, op in _operations()}
    assert set(CHANGES) | set(INTRODUCED) <= operation_ids
    assert set(CONFLICTS) <= operation_ids


async def test_a_conflict_and_a_bad_request_match_the_documented_error_schema(
    api: PlacementClient,
) -> None:
    document = openapi_document()
    schemas = document["components"]["schemas"]
    envelope = {
        **schemas["PlacementErrors"],
        "$defs": {"PlacementError": schemas["PlacementError"]},
    }
    envelope = json.loads(json.dumps(envelope).replace("#/components/schemas/", "#/$defs/"))
    await api.post("/resource_classes", json={"name": "CUSTOM_DOCUMENTED"})
    conflict = await api.post("/resource_classes", json={"name": "CUSTOM_DOCUMENTED"})
    bad = await api.get("/resource_providers", params={"uuid": "not-a-uuid"})
    assert (conflict.status_code, bad.status_code) == (409, 400)
    for response in (conflict, bad):
        jsonschema.validate(response.json(), envelope)


def test_path_and_query_values_are_documented_as_the_server_accepts_them() -> None:
    parameters = {
        (op["operationId"], p["name"]): p["schema"]
        for _, _, op in _operations()
        for p in op["parameters"]
        if "name" in p
    }
    assert parameters["showResourceProvider", "uuid"]["format"] == "uuid"
    assert parameters["createTrait", "name"]["pattern"] == "^CUSTOM_[A-Z0-9_]+$"
    assert "pattern" not in parameters["showTrait", "name"]  # any name: 404 when unknown
    resources = re.compile(parameters["listResourceProviders", "resources"]["pattern"])
    assert resources.match("VCPU:2,MEMORY_MB:4096")
    assert not resources.match("VCPU:0")
    member_of = re.compile(parameters["listAllocationCandidates", "member_of"]["pattern"])
    assert member_of.match(
        "!in:5a8e1c4e-0b0e-4c3a-9a41-2f1f0f6f6c01,5a8e1c4e0b0e4c3a9a412f1f0f6f6c02"
    )
    assert not member_of.match("in:")
