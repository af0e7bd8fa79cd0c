"""The look-up that opens every allocation write, built once.

One statement resolves what a write names — resource classes by name,
providers by uuid, the consumers' owners by external id — into ids, so an
unknown name is refused before anything is locked. On PostgreSQL, a claim
of one new consumer inserts that consumer in the same round trip
(``NAMES_CREATING``). Built and run as ``claim_sql``'s statements are
(``db/prepared.py``).
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import (
    DateTime,
    Integer,
    Select,
    String,
    Table,
    bindparam,
    column,
    literal_column,
    select,
    text,
    union_all,
)

from placement_api.db.models import ResourceClass, ResourceProvider
from placement_api.db.prepared import Membership, Prepared, equals_any
from placement_api.domain.consumers import (
    INCOMPLETE_PROJECT_ID,
    INCOMPLETE_USER_ID,
    ConsumerClaim,
    owner_lookups,
)
from placement_api.domain.timestamps import now

_providers = cast(Table, ResourceProvider.__table__)
_classes = cast(Table, ResourceClass.__table__)


def _names(member: Membership) -> list[Select[tuple[str, str, int]]]:
    """(kind, name, id): the classes and providers a write names, and the
    consumers' owners (``consumers.owner_lookups``)."""
    return [
        select(literal_column("'class'").label("kind"), _classes.c.name, _classes.c.id).where(
            member(_classes.c.name, "names")
        ),
        select(literal_column("'provider'"), _providers.c.uuid, _providers.c.id).where(
            member(_providers.c.uuid, "uuids")
        ),
        *owner_lookups(member),
    ]


# All of them in one round trip.
NAMES = Prepared.per_dialect(lambda member: union_all(*_names(member)))
# PostgreSQL, a claim of one new consumer: in the same round trip, the
# consumer is inserted settled (generation 1), when its owners exist and
# no consumer has its uuid; then a row ('consumer', uuid, id) says so.
_CREATED = (
    text(
        """
        INSERT INTO consumers (uuid, project_id, user_id, consumer_type_id, generation, updated_at)
        SELECT :new_uuid, projects.id, users.id, consumer_types.id, 1, :updated_at
        FROM projects JOIN users ON users.external_id = :new_user
        LEFT JOIN consumer_types ON consumer_types.name = :new_type
        WHERE projects.external_id = :new_project
          AND (:new_type IS NULL OR consumer_types.id IS NOT NULL)
        ON CONFLICT (uuid) DO NOTHING
        RETURNING uuid, id
        """
    )
    .bindparams(
        *(bindparam(name, type_=String) for name in ("new_uuid", "new_user", "new_project")),
        bindparam("new_type", type_=String),
        bindparam("updated_at", type_=DateTime(timezone=True)),
    )
    .columns(column("uuid", String), column("id", Integer))
    .cte("created")
)
NAMES_CREATING = Prepared(
    union_all(
        *_names(equals_any),
        select(literal_column("'consumer'"), _CREATED.c.uuid, _CREATED.c.id),
    )
)


def new_consumer_values(claim: ConsumerClaim) -> dict[str, Any]:
    """``NAMES_CREATING``'s values for the claim's new consumer."""
    return {
        "new_uuid": claim.uuid,
        "new_project": claim.project_id or INCOMPLETE_PROJECT_ID,
        "new_user": claim.user_id or INCOMPLETE_USER_ID,
        "new_type": claim.consumer_type,
        "updated_at": now(),
    }
