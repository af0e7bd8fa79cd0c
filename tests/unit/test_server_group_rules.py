"""The server-group rule a claim must keep, on plain sets (placement_api.domain.server_groups)."""

from __future__ import annotations

import pytest

from placement_api import errors
from placement_api.domain.server_groups import GroupRule, check_rule

ANTI = GroupRule("g", "anti-affinity")
ANTI_TWO = GroupRule("g", "anti-affinity", max_server_per_host=2)
AFFINITY = GroupRule("g", "affinity")


def test_anti_affinity_refuses_a_second_member_where_the_new_one_landed() -> None:
    with pytest.raises(errors.Conflict, match="2 members on host h1"):
        check_rule(ANTI, {"old": {"h1"}, "new": {"h1"}}, {"new"})
    check_rule(ANTI, {"old": {"h1"}, "new": {"h2"}}, {"new"})


def test_anti_affinity_allows_max_server_per_host() -> None:
    check_rule(ANTI_TWO, {"a": {"h1"}, "new": {"h1"}}, {"new"})
    with pytest.raises(errors.Conflict, match="more than max_server_per_host 2"):
        check_rule(ANTI_TWO, {"a": {"h1"}, "b": {"h1"}, "new": {"h1"}}, {"new"})


def test_anti_affinity_judges_only_where_the_write_landed() -> None:
    # Two old members share h1 (written without the group): a new one on h2 is fine.
    check_rule(ANTI, {"a": {"h1"}, "b": {"h1"}, "new": {"h2"}}, {"new"})


def test_affinity_follows_the_other_members_or_keeps_new_ones_together() -> None:
    check_rule(AFFINITY, {"old": {"h1"}, "new": {"h1"}}, {"new"})
    with pytest.raises(errors.Conflict, match="must stay on one host"):
        check_rule(AFFINITY, {"old": {"h1"}, "new": {"h2"}}, {"new"})
    check_rule(AFFINITY, {"x": {"h3"}, "y": {"h3"}}, {"x", "y"})
    with pytest.raises(errors.Conflict, match="h3, h4"):
        check_rule(AFFINITY, {"x": {"h3"}, "y": {"h4"}}, {"x", "y"})


def test_soft_policies_only_record_membership() -> None:
    for policy in ("soft-affinity", "soft-anti-affinity"):
        check_rule(GroupRule("g", policy), {"a": {"h1"}, "b": {"h1"}, "c": {"h2"}}, {"c"})


def test_a_member_holding_nothing_counts_nowhere() -> None:
    check_rule(ANTI, {"new": {"h1"}}, {"new", "released"})
