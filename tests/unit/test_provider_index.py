"""The provider index's pure parts: the capacity test worked out once per
inventory row, when a refresh may apply entries one by one, and the orders
it keeps per filter."""

from __future__ import annotations

import math
import random
from itertools import combinations
from typing import Any, cast

import pytest

from placement_api.domain.candidates.index_tables import FeedNews, ProviderRows
from placement_api.domain.candidates.indexed_cloud import KEPT_ORDERS, IndexedCloud
from placement_api.domain.candidates.indexed_provider import largest_total
from placement_api.domain.candidates.provider_index import MOST_ENTRIES, ProviderIndex


def _databases_pass(used: int, amount: int, limit: float) -> bool:
    # What PostgreSQL and SQLite compute: the bigint total, as a double.
    return float(used + amount) <= limit


@pytest.mark.parametrize("scale", [1, 2**40, 2**52, 2**53, 2**60, 2**70])
def test_largest_total_agrees_with_the_databases_double_comparison(scale: int) -> None:
    rng = random.Random(scale)
    for _ in range(2000):
        limit = float(rng.randrange(scale, 4 * scale + 2)) * rng.choice([1.0, 1.3, 16.0, 0.7])
        largest = largest_total(limit)
        for total in (largest - 1, largest, largest + 1, largest + 2):
            assert (total <= largest) == _databases_pass(total, 0, limit), (limit, total)


def test_largest_total_of_a_fractional_limit_is_its_floor() -> None:
    assert largest_total(650.0000000000001) == 650
    assert largest_total(0.5) == 0
    assert largest_total(-3.5) == math.floor(-3.5)


def _news(last: int, *indexes: int | None, epoch: str = "e") -> FeedNews:
    return FeedNews(epoch, last, [(i, "allocation", "created", "u", {}) for i in indexes])


@pytest.mark.parametrize(
    ("news", "applies"),
    [
        (_news(10), True),  # nothing new
        (_news(12, 11, 12), True),  # carries on
        (_news(12, 11, 12, None), True),  # and one not indexed yet
        (_news(10, None), True),
        (_news(12, 12), False),  # 11 was pruned
        (_news(12, None, 12), False),
        (_news(9), False),  # the head went back: a restored database
        (_news(11, 11, epoch="f"), False),  # a new epoch (a failover)
        (_news(10 + MOST_ENTRIES + 1, *range(11, 12 + MOST_ENTRIES)), False),  # too many
    ],
)
def test_entries_apply_one_by_one_only_when_they_carry_on(news: FeedNews, applies: bool) -> None:
    assert ProviderIndex._applies(news, ("e", 10)) is applies


def test_orders_kept_per_filter_are_bounded_whatever_filters_clients_send() -> None:
    cloud = IndexedCloud()
    positions = [(ident, f"uuid-{ident}", ident, None) for ident in range(1, 41)]
    aggregates = [(ident, aggregate) for ident in range(1, 41) for aggregate in range(ident % 8)]
    # Tuples in place of the database's rows, which they read like.
    cloud._put(ProviderRows(cast(Any, positions), [], cast(Any, aggregates), []), ())
    for size in range(1, 4):
        for any_of in combinations(range(8), size):
            ids = frozenset(any_of)
            assert [p.id for p in cloud.in_order("aggregate", ids)] == sorted(
                cloud.holding("aggregate", ids)
            )
            assert cloud.roots_holding("aggregate", ids) == sorted(cloud.holding("aggregate", ids))
    # 92 filters asked for; the most recent are kept.
    assert len(cloud._sorted) <= 1.5 * KEPT_ORDERS
    assert len(cloud._roots_holding) <= 1.5 * KEPT_ORDERS
