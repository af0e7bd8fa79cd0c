"""server groups: durable membership, so a group's rule is checked in the claim

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27

A claim that names a server group (an extension of the allocation write,
docs/server-groups.md) locks the group's row and checks its rule against
where the members' allocations are, in the claim's own transaction.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "server_groups",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("policy", sa.String(length=32), nullable=False),
        sa.Column("max_server_per_host", sa.Integer(), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_server_groups")),
        sa.UniqueConstraint("uuid", name=op.f("uq_server_groups_uuid")),
    )
    op.create_table(
        "server_group_members",
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.Column("consumer_uuid", sa.String(length=36), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["group_id"],
            ["server_groups.id"],
            name=op.f("fk_server_group_members_group_id_server_groups"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("group_id", "consumer_uuid", name=op.f("pk_server_group_members")),
    )
    op.create_index(
        "ix_server_group_members_consumer_uuid", "server_group_members", ["consumer_uuid"]
    )


def downgrade() -> None:
    op.drop_index("ix_server_group_members_consumer_uuid", table_name="server_group_members")
    op.drop_table("server_group_members")
    op.drop_table("server_groups")
