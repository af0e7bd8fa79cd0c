"""openapi.yaml is generated from the app, valid, and current."""

from __future__ import annotations

from pathlib import Path

import yaml
from openapi_spec_validator import validate

from placement_api.openapi import openapi_document, render_openapi_yaml

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
