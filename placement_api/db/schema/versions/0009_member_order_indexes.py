"""candidates: trait holders and aggregate members indexed in provider order

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27

A limited candidate search filtered by a trait or an aggregate reads the
trees of its holders or members page by page, the lowest provider ids first
(docs/candidates.md). Indexed by (trait, provider) and (aggregate,
provider), a page is a range of one index, read in order and stopped at the
page's size: its cost follows the answer, not the number of holders. Each
new index replaces the one on the trait or aggregate alone, which it covers.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# table -> (the index on the filter's column alone, the new one, that column)
_INDEXES = {
    "resource_provider_traits": (
        "ix_resource_provider_traits_trait_id",
        "ix_resource_provider_traits_trait_id_provider",
        "trait_id",
    ),
    "resource_provider_aggregates": (
        "ix_resource_provider_aggregates_aggregate_id",
        "ix_resource_provider_aggregates_aggregate_id_provider",
        "aggregate_id",
    ),
}


def upgrade() -> None:
    for table, (old, new, column) in _INDEXES.items():
        op.create_index(new, table, [column, "resource_provider_id"])
        op.drop_index(old, table_name=table)


def downgrade() -> None:
    for table, (old, new, column) in _INDEXES.items():
        op.create_index(old, table, [column])
        op.drop_index(new, table_name=table)
