"""The operator's files a capacity report reads: aggregate names and zones, flavors.

Both are the scheduler's own formats, parsed by the models both programs
share (the ``flavors`` package), so one file serves both:
``PLACEMENT_CAPACITY_AGGREGATES_FILE`` is a YAML file with the scheduler's
``aggregates`` mapping (a scheduler configuration file will do: its other
keys are ignored), and ``PLACEMENT_CAPACITY_FLAVORS_FILE`` a scheduler
flavors file. They are read once, when the API starts (or the command runs):
an edit, or a file removed, takes effect at the next start, which a bad file
stops (docs/capacity.md).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from flavors.aggregates import AggregateConfig
from flavors.file_errors import UnreadableFile, read_yaml, validation_reason
from flavors.files import FlavorsFileError, load_flavors
from flavors.flavor import flavor_groups
from placement_api.domain.candidates.request import RequestGroup
from placement_api.domain.capacity_report.flavor import Flavor
from placement_api.domain.capacity_report.zones import AggregateInfo, ZoneMap
from placement_api.domain.filters import TraitFilter
from placement_api.settings import Settings

AGGREGATES_SETTING = "PLACEMENT_CAPACITY_AGGREGATES_FILE"
FLAVORS_SETTING = "PLACEMENT_CAPACITY_FLAVORS_FILE"


class CapacityFileError(Exception):
    """A one-line reason a capacity file could not be used."""


class _AggregatesDocument(BaseModel):
    model_config = ConfigDict(extra="ignore")

    aggregates: dict[str, AggregateConfig] = Field(default_factory=dict)


def load_zone_map(path: Path | None, default_zone: str) -> ZoneMap:
    if path is None:
        return ZoneMap(default_zone=default_zone)
    try:
        document = _AggregatesDocument.model_validate(
            read_yaml(path, "aggregates file", AGGREGATES_SETTING) or {}
        )
    except UnreadableFile as exc:
        raise CapacityFileError(str(exc)) from None
    except ValidationError as exc:
        raise CapacityFileError(
            f"{path}: not an aggregates mapping: {validation_reason(exc)}"
        ) from None
    infos = {}
    for key, config in document.aggregates.items():
        try:
            infos[str(uuid.UUID(key))] = AggregateInfo(config.name, config.availability_zone)
        except ValueError:
            raise CapacityFileError(f"{path}: aggregates.{key}: not an aggregate UUID") from None
    return ZoneMap(infos, default_zone)


def flavors_from_file(path: Path) -> list[Flavor]:
    """A scheduler flavors file's flavors as request groups; granular ones are refused."""
    try:
        flavors = load_flavors(path, FLAVORS_SETTING)
    except FlavorsFileError as exc:
        raise CapacityFileError(str(exc)) from None
    found = []
    for name, flavor in sorted(flavors.items()):
        groups = flavor_groups(flavor)
        if not groups.resources:
            raise CapacityFileError(f"{path}: flavor {name} asks for no resources")
        if groups.granular:
            raise CapacityFileError(
                f"{path}: flavor {name} has numbered request groups; capacity reports "
                "count the unsuffixed group only"
            )
        required = TraitFilter(
            any_of=[frozenset([trait]) for trait in sorted(groups.required)],
            forbidden=set(groups.forbidden),
        )
        found.append(Flavor(name, RequestGroup("", groups.resources, required)))
    return found


@dataclass(frozen=True)
class CapacitySources:
    zones: ZoneMap
    flavors: list[Flavor]

    @classmethod
    def from_settings(cls, settings: Settings) -> CapacitySources:
        zones = load_zone_map(
            settings.capacity_aggregates_file, settings.capacity_default_availability_zone
        )
        path = settings.capacity_flavors_file
        return cls(zones, flavors_from_file(path) if path is not None else [])
