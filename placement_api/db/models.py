"""The relational model. Alembic migrations create it; nothing else does.

``inventories.used`` is the sum of ``allocations.used`` for that provider
and class. Every allocation write maintains it in the same transaction, so
capacity checks and candidate queries read one row per (provider, class)
instead of re-aggregating every allocation.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Sequence,
    String,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class TimestampMixin:
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )
    updated_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class ResourceClass(TimestampMixin, Base):
    __tablename__ = "resource_classes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True, nullable=False)


class Trait(TimestampMixin, Base):
    __tablename__ = "traits"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True, nullable=False)


class ResourceProvider(TimestampMixin, Base):
    __tablename__ = "resource_providers"
    __table_args__ = (
        Index("ix_resource_providers_root_provider_id", "root_provider_id"),
        Index("ix_resource_providers_parent_provider_id", "parent_provider_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uuid: Mapped[str] = mapped_column(String(36), unique=True, nullable=False)
    name: Mapped[str] = mapped_column(String(200), unique=True, nullable=False)
    generation: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    root_provider_id: Mapped[int | None] = mapped_column(
        ForeignKey("resource_providers.id"), nullable=True
    )
    parent_provider_id: Mapped[int | None] = mapped_column(
        ForeignKey("resource_providers.id"), nullable=True
    )


class Inventory(TimestampMixin, Base):
    __tablename__ = "inventories"
    __table_args__ = (
        UniqueConstraint("resource_provider_id", "resource_class_id"),
        Index("ix_inventories_resource_class_id", "resource_class_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    resource_provider_id: Mapped[int] = mapped_column(
        ForeignKey("resource_providers.id", ondelete="CASCADE"), nullable=False
    )
    resource_class_id: Mapped[int] = mapped_column(
        ForeignKey("resource_classes.id"), nullable=False
    )
    total: Mapped[int] = mapped_column(BigInteger, nullable=False)
    reserved: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    min_unit: Mapped[int] = mapped_column(BigInteger, nullable=False, default=1)
    max_unit: Mapped[int] = mapped_column(BigInteger, nullable=False)
    step_size: Mapped[int] = mapped_column(BigInteger, nullable=False, default=1)
    allocation_ratio: Mapped[float] = mapped_column(Float, nullable=False, default=1.0)
    used: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)


class Project(TimestampMixin, Base):
    __tablename__ = "projects"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    external_id: Mapped[str] = mapped_column(String(255), unique=True, nullable=False)


class User(TimestampMixin, Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    external_id: Mapped[str] = mapped_column(String(255), unique=True, nullable=False)


class ConsumerType(TimestampMixin, Base):
    __tablename__ = "consumer_types"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True, nullable=False)


class Consumer(TimestampMixin, Base):
    __tablename__ = "consumers"
    __table_args__ = (Index("ix_consumers_project_id_user_id", "project_id", "user_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uuid: Mapped[str] = mapped_column(String(36), unique=True, nullable=False)
    # Ids of projects, users and consumer_types, none of which is ever
    # deleted: no foreign keys (migration 0006, docs/architecture.md).
    project_id: Mapped[int] = mapped_column(Integer, nullable=False)
    user_id: Mapped[int] = mapped_column(Integer, nullable=False)
    consumer_type_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    generation: Mapped[int] = mapped_column(Integer, nullable=False, default=0)


class Allocation(TimestampMixin, Base):
    __tablename__ = "allocations"
    __table_args__ = (
        UniqueConstraint("consumer_id", "resource_provider_id", "resource_class_id"),
        Index(
            "ix_allocations_resource_provider_id_class", "resource_provider_id", "resource_class_id"
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # No foreign keys (migration 0006): the write path's row locks keep every
    # row's provider, consumer and inventory (so class) in existence
    # (docs/architecture.md, "Integrity without foreign keys").
    resource_provider_id: Mapped[int] = mapped_column(Integer, nullable=False)
    consumer_id: Mapped[int] = mapped_column(Integer, nullable=False)
    resource_class_id: Mapped[int] = mapped_column(Integer, nullable=False)
    used: Mapped[int] = mapped_column(BigInteger, nullable=False)


class Aggregate(TimestampMixin, Base):
    __tablename__ = "placement_aggregates"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uuid: Mapped[str] = mapped_column(String(36), unique=True, nullable=False)


class ProviderAggregate(TimestampMixin, Base):
    __tablename__ = "resource_provider_aggregates"
    # In provider order per aggregate: candidates read members page by page.
    __table_args__ = (
        Index(
            "ix_resource_provider_aggregates_aggregate_id_provider",
            "aggregate_id",
            "resource_provider_id",
        ),
    )

    resource_provider_id: Mapped[int] = mapped_column(
        ForeignKey("resource_providers.id", ondelete="CASCADE"), primary_key=True
    )
    aggregate_id: Mapped[int] = mapped_column(
        ForeignKey("placement_aggregates.id"), primary_key=True
    )


class ProviderTrait(TimestampMixin, Base):
    __tablename__ = "resource_provider_traits"
    # In provider order per trait: candidates read holders page by page.
    __table_args__ = (
        Index("ix_resource_provider_traits_trait_id_provider", "trait_id", "resource_provider_id"),
    )

    resource_provider_id: Mapped[int] = mapped_column(
        ForeignKey("resource_providers.id", ondelete="CASCADE"), primary_key=True
    )
    trait_id: Mapped[int] = mapped_column(ForeignKey("traits.id"), primary_key=True)


class ProviderHeartbeat(Base):
    """When a root provider's agent last reported (``PUT .../heartbeat``) and the
    utilisation it measured. Not a provider write: no generation moves and the
    change feed records nothing. Deleting the provider deletes its row."""

    __tablename__ = "provider_heartbeats"

    resource_provider_id: Mapped[int] = mapped_column(
        ForeignKey("resource_providers.id", ondelete="CASCADE"), primary_key=True
    )
    last_seen: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    interval_seconds: Mapped[int] = mapped_column(Integer, nullable=False)
    metrics: Mapped[dict[str, float]] = mapped_column(JSON, nullable=False)
    metrics_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class ServerGroup(TimestampMixin, Base):
    """A server group whose rule claims naming it keep (docs/server-groups.md):
    its row is what concurrent claims of the group queue on."""

    __tablename__ = "server_groups"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uuid: Mapped[str] = mapped_column(String(36), unique=True, nullable=False)
    policy: Mapped[str] = mapped_column(String(32), nullable=False)
    max_server_per_host: Mapped[int] = mapped_column(Integer, nullable=False)


class ServerGroupMember(TimestampMixin, Base):
    """A consumer claimed in a group. Where it runs is read from its allocations,
    so a member that holds nothing counts nowhere."""

    __tablename__ = "server_group_members"
    __table_args__ = (Index("ix_server_group_members_consumer_uuid", "consumer_uuid"),)

    group_id: Mapped[int] = mapped_column(
        ForeignKey("server_groups.id", ondelete="CASCADE"), primary_key=True
    )
    consumer_uuid: Mapped[str] = mapped_column(String(36), primary_key=True)


class ChangeFeedHead(Base):
    """The change feed's one-row counter: the last index handed out.

    Only a sequencing run advances it (``domain/feed_index.py``), under its
    row lock on PostgreSQL; on SQLite each recording write, inside the one writer.
    ``epoch`` names the history its indexes belong to: a sequencing run on
    another PostgreSQL timeline than ``epoch_timeline`` (a promoted standby)
    mints a new one, since indexes the old primary gave may be given again."""

    __tablename__ = "change_feed_head"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    last_index: Mapped[int] = mapped_column(BigInteger, nullable=False)
    epoch: Mapped[str] = mapped_column(String(64), nullable=False, server_default="")
    epoch_timeline: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")


# One value per recording transaction, taken as its last statement, so a
# write that had to wait for another's locks always gets the higher value.
CHANGE_COMMIT_SEQUENCE = Sequence("change_commit_seq", metadata=Base.metadata)


class Change(Base):
    """One entry of the change feed (``GET /changes``), written in the same
    transaction as the write it records. ``(commit_seq, ordinal)`` orders it;
    ``feed_index`` is its index, given once it has committed (NULL until
    then on PostgreSQL). ``details`` holds the fields that depend on
    ``resource`` (generations, classes, allocations, ...). On PostgreSQL
    its pages are half filled (migration 0005), so giving an entry its index
    writes the new row version beside the old one."""

    __tablename__ = "changes"
    __table_args__ = (
        Index(
            "uq_changes_feed_index",
            "feed_index",
            unique=True,
            postgresql_where=text("feed_index IS NOT NULL"),
            sqlite_where=text("feed_index IS NOT NULL"),
        ),
        Index(
            "ix_changes_unindexed",
            "commit_seq",
            "ordinal",
            postgresql_where=text("feed_index IS NULL"),
            sqlite_where=text("feed_index IS NULL"),
        ),
    )

    commit_seq: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    ordinal: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    feed_index: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    resource: Mapped[str] = mapped_column(String(32), nullable=False)
    action: Mapped[str] = mapped_column(String(16), nullable=False)
    uuid: Mapped[str] = mapped_column(String(255), nullable=False)
    details: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
