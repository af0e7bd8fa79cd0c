"""The capacity rule, in one place for both Python and SQL.

A request of ``amount`` of a class fits a provider's inventory when

    used + amount <= (total - reserved) * allocation_ratio
    min_unit <= amount <= max_unit  and  amount % step_size == 0

Python callers (allocation writes, on rows they have locked) use
``fits``/``unit_violation``; queries (provider lists, candidates) use
``fits_clause`` so both apply the same arithmetic.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import BigInteger, ColumnElement, and_, func, or_

from placement_api.db.models import Inventory

# The largest max_unit an inventory may have (a 32-bit column upstream, and
# the API's bound): a larger amount breaks it whatever the inventory.
LARGEST_UNIT = 2**31 - 1
# Past this, a net change of usage could overflow the 64-bit ``used`` in SQL;
# an inventory large enough to hold it cannot exist.
LARGEST_CHANGE = 2**62


@dataclass(frozen=True)
class InventoryLimits:
    total: int
    reserved: int
    min_unit: int
    max_unit: int
    step_size: int
    allocation_ratio: float

    @property
    def capacity(self) -> float:
        return (self.total - self.reserved) * self.allocation_ratio

    @classmethod
    def from_row(cls, row: Any) -> InventoryLimits:
        """From a result row that selected ``LIMIT_COLUMNS``."""
        return cls(
            total=row.total,
            reserved=row.reserved,
            min_unit=row.min_unit,
            max_unit=row.max_unit,
            step_size=row.step_size,
            allocation_ratio=row.allocation_ratio,
        )

    def column_values(self) -> dict[str, Any]:
        """The ``inventories`` columns these limits are stored in."""
        return asdict(self)


LIMIT_COLUMNS = (
    Inventory.total,
    Inventory.reserved,
    Inventory.min_unit,
    Inventory.max_unit,
    Inventory.step_size,
    Inventory.allocation_ratio,
)


def fits(limits: InventoryLimits, used: int) -> bool:
    """``used`` is the usage after the write, including the amount requested."""
    return used <= limits.capacity


def unit_violation(limits: InventoryLimits, amount: int) -> str | None:
    """Why ``amount`` breaks min_unit/max_unit/step_size, or None when it does not."""
    if amount < limits.min_unit:
        return f"amount {amount} is below min_unit {limits.min_unit}"
    if amount > limits.max_unit:
        return f"amount {amount} is above max_unit {limits.max_unit}"
    if amount % limits.step_size:
        return f"amount {amount} is not a multiple of step_size {limits.step_size}"
    return None


# Capacity is shown as a 64-bit integer: a larger one (from a ratio far
# beyond any real overcommit) is shown as this, the largest such integer a
# double holds exactly (databases compute capacity as a double).
LARGEST_SHOWN_CAPACITY = 2**63 - 1024


def shown_capacity(dialect: str) -> ColumnElement[int]:
    """SQL: the inventory row's capacity as responses show it, a whole number."""
    capacity = (Inventory.total - Inventory.reserved) * Inventory.allocation_ratio
    if dialect == "postgresql":
        capped = func.least(func.trunc(capacity), LARGEST_SHOWN_CAPACITY)
    else:
        # SQLite's two-argument min() is its least(); its cast truncates.
        capped = func.min(capacity, LARGEST_SHOWN_CAPACITY)
    return capped.cast(BigInteger)


def fits_clause(amount: int, inventory: type[Inventory] = Inventory) -> ColumnElement[bool]:
    """SQL: ``amount`` more of this inventory row's class fits, units included."""
    return and_(
        inventory.used + amount
        <= (inventory.total - inventory.reserved) * inventory.allocation_ratio,
        inventory.min_unit <= amount,
        inventory.max_unit >= amount,
        # Same test as ``amount % step_size == 0`` alone, but query planners
        # can estimate ``step_size = 1`` from column statistics: the bare
        # modulo makes them think almost no row fits, and plan accordingly.
        or_(inventory.step_size == 1, amount % inventory.step_size == 0),
    )
