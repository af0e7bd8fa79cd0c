"""claims: no foreign keys on allocations and consumers; the write path's locks hold them

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24

PostgreSQL checks each of these with a ``SELECT ... FOR KEY SHARE`` of the
referenced row per inserted row. Every claim names the same few of them
(the VCPU class, one project, one user), so concurrent claims queue on
those rows' MultiXacts for a check the write path already guarantees by
its own locks (docs/architecture.md, "Integrity without foreign keys"):
about a fifth of PostgreSQL's CPU per claim. Upstream Placement has no
foreign keys on these tables either. SQLite rebuilds the tables (batch mode).
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# table -> (column, referred table, ON DELETE), allocations first: it refers to consumers.
_FOREIGN_KEYS: dict[str, list[tuple[str, str, str | None]]] = {
    "allocations": [
        ("resource_provider_id", "resource_providers", None),
        ("consumer_id", "consumers", "CASCADE"),
        ("resource_class_id", "resource_classes", None),
    ],
    "consumers": [
        ("project_id", "projects", None),
        ("user_id", "users", None),
        ("consumer_type_id", "consumer_types", None),
    ],
}


def _name(table: str, column: str, referred: str) -> str:
    return f"fk_{table}_{column}_{referred}"


def upgrade() -> None:
    for table, keys in _FOREIGN_KEYS.items():
        with op.batch_alter_table(table) as batch_op:
            for column, referred, _ondelete in keys:
                batch_op.drop_constraint(_name(table, column, referred), type_="foreignkey")


def downgrade() -> None:
    for table, keys in reversed(_FOREIGN_KEYS.items()):
        with op.batch_alter_table(table) as batch_op:
            for column, referred, ondelete in keys:
                batch_op.create_foreign_key(
                    _name(table, column, referred), referred, [column], ["id"], ondelete=ondelete
                )
