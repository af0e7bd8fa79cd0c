"""change feed: the changes table and its counter

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    head = op.create_table(
        "change_feed_head",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("last_index", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_change_feed_head")),
    )
    op.bulk_insert(head, [{"id": 1, "last_index": 0}])
    op.create_table(
        "changes",
        sa.Column("id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("resource", sa.String(length=32), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("uuid", sa.String(length=255), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_changes")),
    )


def downgrade() -> None:
    op.drop_table("changes")
    op.drop_table("change_feed_head")
