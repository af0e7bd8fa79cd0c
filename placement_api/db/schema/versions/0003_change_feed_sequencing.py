"""change feed: indexes given after commit, so recording writes commit in parallel

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24

Entries are ordered by ``(commit_seq, ordinal)`` and get their ``feed_index``
from a sequencing run once committed; existing entries keep their index.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COLUMNS = "resource, action, uuid, details"


def _create_changes(table: str) -> None:
    op.create_table(
        table,
        sa.Column("commit_seq", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("ordinal", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("feed_index", sa.BigInteger(), nullable=True),
        sa.Column("resource", sa.String(length=32), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("uuid", sa.String(length=255), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("commit_seq", "ordinal", name="pk_changes"),
    )


def upgrade() -> None:
    op.rename_table("changes", "changes_0002")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE changes_0002 RENAME CONSTRAINT pk_changes TO pk_changes_0002")
    _create_changes("changes")
    op.execute(
        f"INSERT INTO changes (commit_seq, ordinal, feed_index, {_COLUMNS}) "
        f"SELECT id, 0, id, {_COLUMNS} FROM changes_0002"
    )
    op.drop_table("changes_0002")
    not_null, null = sa.text("feed_index IS NOT NULL"), sa.text("feed_index IS NULL")
    op.create_index(
        "uq_changes_feed_index",
        "changes",
        ["feed_index"],
        unique=True,
        postgresql_where=not_null,
        sqlite_where=not_null,
    )
    op.create_index(
        "ix_changes_unindexed",
        "changes",
        ["commit_seq", "ordinal"],
        postgresql_where=null,
        sqlite_where=null,
    )
    if op.get_bind().dialect.name == "postgresql":
        # Past every index already given, so the copied rows' keys stay unique.
        op.execute("CREATE SEQUENCE change_commit_seq")
        op.execute(
            "SELECT setval('change_commit_seq', "
            "(SELECT last_index FROM change_feed_head WHERE id = 1) + 1, false)"
        )


def downgrade() -> None:
    # Entries committed since the last sequencing run get their indexes first.
    op.execute(
        "UPDATE changes SET feed_index = "
        "(SELECT last_index FROM change_feed_head WHERE id = 1) + "
        "(SELECT count(*) FROM changes AS earlier WHERE earlier.feed_index IS NULL "
        "AND (earlier.commit_seq, earlier.ordinal) <= (changes.commit_seq, changes.ordinal)) "
        "WHERE feed_index IS NULL"
    )
    op.execute(
        "UPDATE change_feed_head SET last_index = (SELECT max(feed_index) FROM changes) "
        "WHERE id = 1 AND (SELECT max(feed_index) FROM changes) > last_index"
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP SEQUENCE change_commit_seq")
    op.drop_index("ix_changes_unindexed", table_name="changes")
    op.drop_index("uq_changes_feed_index", table_name="changes")
    op.rename_table("changes", "changes_0003")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE changes_0003 RENAME CONSTRAINT pk_changes TO pk_changes_0003")
    op.create_table(
        "changes",
        sa.Column("id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("resource", sa.String(length=32), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("uuid", sa.String(length=255), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_changes"),
    )
    op.execute(
        f"INSERT INTO changes (id, {_COLUMNS}) SELECT feed_index, {_COLUMNS} FROM changes_0003"
    )
    op.drop_table("changes_0003")
