"""Operator-supplied custom inventory and traits, in Nova's provider config YAML shape.

meta: {schema_version: "1.0"}
providers:
  - identification: {uuid: $COMPUTE_NODE}     # or {name: ...} or {uuid: <uuid>}
    inventories:
      additional:
        - CUSTOM_FPGA: {total: 4, max_unit: 2}
        - FPGA: {total: 2}                      # standard classes too (os-resource-classes)
    traits:
      additional: [CUSTOM_FAST_STORAGE]

A class the agent reports itself for that provider (VCPU, PCPU, MEMORY_MB, ...) is
refused: the host says how much of it there is.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Self

import os_resource_classes
import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

ROOT_PROVIDER_ALIAS = "$COMPUTE_NODE"
SUPPORTED_SCHEMA_VERSIONS = frozenset({"1.0"})
_CUSTOM_NAME = re.compile(r"^CUSTOM_[A-Z0-9_]+$")


class ProviderConfigError(ValueError):
    """The provider config file is missing, unreadable or invalid."""


def class_name(value: str) -> str:
    if not _CUSTOM_NAME.fullmatch(value) and value not in os_resource_classes.STANDARDS:
        raise ValueError(
            f"{value!r} is neither a custom class (CUSTOM_ then A-Z, 0-9, _) nor a standard "
            "one (os-resource-classes)"
        )
    return value


def _custom_name(value: str) -> str:
    if not _CUSTOM_NAME.fullmatch(value):
        raise ValueError(f"{value!r} is not a custom name (CUSTOM_ then A-Z, 0-9, _)")
    return value


ClassName = Annotated[str, AfterValidator(class_name)]
CustomName = Annotated[str, AfterValidator(_custom_name)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CustomInventory(_Strict):
    total: int = Field(gt=0)
    reserved: int = Field(default=0, ge=0)
    min_unit: int = Field(default=1, ge=1)
    max_unit: int | None = Field(default=None, ge=1)
    step_size: int = Field(default=1, ge=1)
    allocation_ratio: float = Field(default=1.0, gt=0)

    @model_validator(mode="after")
    def _units_fit_total(self) -> Self:
        if self.reserved > self.total:
            raise ValueError("reserved is larger than total")
        if self.max_unit is not None and self.min_unit > self.max_unit:
            raise ValueError("min_unit is larger than max_unit")
        return self


class Identification(_Strict):
    uuid: str | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        if (self.uuid is None) == (self.name is None):
            raise ValueError("identification needs exactly one of uuid or name")
        return self

    def matches(self, uuid: str, name: str, is_root: bool) -> bool:
        if self.uuid == ROOT_PROVIDER_ALIAS:
            return is_root
        if self.uuid is not None:
            return self.uuid.lower() == uuid.lower()
        return self.name == name


class AdditionalInventories(_Strict):
    additional: list[dict[ClassName, CustomInventory]] = Field(default_factory=list)


class AdditionalTraits(_Strict):
    additional: list[CustomName] = Field(default_factory=list)


class ProviderEntry(_Strict):
    identification: Identification
    inventories: AdditionalInventories = Field(default_factory=AdditionalInventories)
    traits: AdditionalTraits = Field(default_factory=AdditionalTraits)


class Meta(_Strict):
    schema_version: str

    @model_validator(mode="after")
    def _supported(self) -> Self:
        if self.schema_version not in SUPPORTED_SCHEMA_VERSIONS:
            raise ValueError(f"schema_version {self.schema_version} is not supported")
        return self


class ProviderConfig(_Strict):
    meta: Meta
    providers: list[ProviderEntry] = Field(default_factory=list)

    @model_validator(mode="after")
    def _identifications_unique(self) -> Self:
        seen = [entry.identification for entry in self.providers]
        if len(seen) != len(set(seen)):
            raise ValueError("a provider is identified more than once")
        return self

    def custom_inventory_for(
        self, uuid: str, name: str, is_root: bool
    ) -> dict[str, CustomInventory]:
        found: dict[str, CustomInventory] = {}
        for entry in self._entries_for(uuid, name, is_root):
            for mapping in entry.inventories.additional:
                found.update(mapping)
        return found

    def custom_traits_for(self, uuid: str, name: str, is_root: bool) -> frozenset[str]:
        return frozenset(
            trait
            for entry in self._entries_for(uuid, name, is_root)
            for trait in entry.traits.additional
        )

    def _entries_for(self, uuid: str, name: str, is_root: bool) -> list[ProviderEntry]:
        return [e for e in self.providers if e.identification.matches(uuid, name, is_root)]


EMPTY_PROVIDER_CONFIG = ProviderConfig(meta=Meta(schema_version="1.0"))


def load_provider_config(path: Path | None) -> ProviderConfig:
    if path is None:
        return EMPTY_PROVIDER_CONFIG
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ProviderConfigError(f"cannot read provider config {path}: {error}") from error
    try:
        return ProviderConfig.model_validate(document)
    except ValidationError as error:
        raise ProviderConfigError(f"invalid provider config {path}: {error}") from error
