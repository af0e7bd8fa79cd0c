"""change feed: an epoch beside the head, changed when a new timeline first sequences

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27

After a failover to a standby that had not replayed everything, the new
primary hands out again indexes the old one had given to entries that were
lost. ``epoch`` names the history the indexes belong to: the sequencing run
of a server on another timeline than ``epoch_timeline`` mints a new one
(docs/ha.md, "The change feed across a failover"). Existing feeds get one
minted here.
"""

import uuid
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "change_feed_head",
        sa.Column("epoch", sa.String(length=64), nullable=False, server_default=""),
    )
    op.add_column(
        "change_feed_head",
        sa.Column("epoch_timeline", sa.BigInteger(), nullable=False, server_default="0"),
    )
    op.execute(
        sa.text("UPDATE change_feed_head SET epoch = :epoch").bindparams(
            epoch=f"0-{uuid.uuid4().hex[:16]}"
        )
    )


def downgrade() -> None:
    with op.batch_alter_table("change_feed_head") as batch:
        batch.drop_column("epoch_timeline")
        batch.drop_column("epoch")
