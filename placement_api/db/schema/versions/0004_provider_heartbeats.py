"""provider heartbeats: when each host's agent last reported, and its utilisation

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Each host rewrites its row every interval: leave half of every page free so
# PostgreSQL can put the new row version beside the old one (a HOT update,
# with no index write and no vacuum needed to reuse the space).
FILLFACTOR = 50


def upgrade() -> None:
    op.create_table(
        "provider_heartbeats",
        sa.Column("resource_provider_id", sa.Integer(), nullable=False),
        sa.Column("last_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("interval_seconds", sa.Integer(), nullable=False),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("metrics_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["resource_provider_id"],
            ["resource_providers.id"],
            name=op.f("fk_provider_heartbeats_resource_provider_id_resource_providers"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("resource_provider_id", name=op.f("pk_provider_heartbeats")),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"ALTER TABLE provider_heartbeats SET (fillfactor = {FILLFACTOR})")


def downgrade() -> None:
    op.drop_table("provider_heartbeats")
