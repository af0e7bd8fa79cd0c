"""The dashboard's snapshot: API answers joined into what the page shows, and its paging."""

from __future__ import annotations

from typing import Any

import pytest

from placement_api.dashboard.flavors import parse_flavor, parse_flavors
from placement_api.dashboard.snapshot import Liveness, build_snapshot, host_page


def _figures(total: int, used: int, reserved: int = 0, ratio: float = 1.0) -> dict[str, Any]:
    capacity = int((total - reserved) * ratio)
    return {
        "total": total,
        "reserved": reserved,
        "allocation_ratio": ratio,
        "capacity": capacity,
        "used": used,
        "free": capacity - used,
    }


USAGE = {
    "hosts": [
        {"uuid": "u-b", "name": "beta", "resources": {"VCPU": _figures(8, 12, ratio=2.0)}},
        {"uuid": "u-a", "name": "alpha", "resources": {"VCPU": _figures(8, 2)}},
        {"uuid": "u-c", "name": "gamma", "resources": {"VCPU": _figures(4, 5)}},
    ],
    "resource_classes": {"VCPU": {"capacity": 28, "used": 27}},
    "aggregates": [{"uuid": "agg-1", "name": "rack1", "availability_zone": "az1", "hosts": 2}],
    "availability_zones": [{"name": "az1", "hosts": 2}],
    "counting": "root providers",
    "sharing_providers": [
        {"uuid": "u-pool", "name": "pool", "hosts": 2, "resources": {"DISK_GB": _figures(100, 120)}}
    ],
}
FITS = {
    "one-cpu": {
        "fits": 6,
        "hosts": [{"uuid": "u-a", "fits": 6}],  # beta and gamma are absent: nothing fits
        "aggregates": [{"uuid": "agg-1", "fits": 6}],
        "availability_zones": [{"name": "az1", "fits": 6}],
    }
}


def _snapshot(liveness: Liveness | None = None, changes: list[dict[str, Any]] | None = None):
    return build_snapshot(
        USAGE, FITS, liveness or Liveness(available=False), changes or [], version=3
    )


def test_hosts_are_listed_by_name_with_their_fits_and_absent_hosts_fit_none():
    page = host_page(_snapshot())
    assert [(h["name"], h["fits"]["one-cpu"]) for h in page["hosts"]] == [
        ("alpha", 6),
        ("beta", 0),
        ("gamma", 0),
    ]


def test_zones_and_aggregates_carry_each_flavors_fits():
    summary = _snapshot().summary
    assert summary["fits"] == {"one-cpu": 6}
    assert summary["availability_zones"] == [{"name": "az1", "hosts": 2, "fits": {"one-cpu": 6}}]
    assert summary["aggregates"][0]["fits"] == {"one-cpu": 6}


def test_hosts_and_sharing_providers_with_negative_free_are_over_capacity():
    summary = _snapshot().summary
    assert summary["over_capacity"]["count"] == 2
    assert [h["name"] for h in summary["over_capacity"]["hosts"]] == ["gamma", "pool"]
    assert summary["over_capacity"]["hosts"][0]["classes"]["VCPU"]["free"] == -1
    assert summary["host_count"] == 3  # the pool is not a host


def test_down_hosts_come_from_the_heartbeats_and_unknown_liveness_says_so():
    beat = {"resource_provider_uuid": "u-b", "name": "beta", "last_seen": "t", "down_after": "t"}
    snapshot = _snapshot(Liveness(available=True, now="now", down=(beat,)))
    assert snapshot.summary["liveness"]["down"] == [beat]
    assert host_page(snapshot, only="down")["hosts"][0]["name"] == "beta"
    unknown = _snapshot().summary["liveness"]
    assert unknown["available"] is False
    assert unknown["down_count"] == 0


def test_allocation_changes_name_the_providers_they_touched():
    change = {
        "index": 9,
        "resource": "allocation",
        "action": "created",
        "uuid": "consumer",
        "usages": {"u-a": {"VCPU": 3}, "u-gone": {"VCPU": 0}},
    }
    described = _snapshot(changes=[change]).summary["changes"]
    assert described[0]["providers"] == ["alpha", "u-gone"]


def test_search_matches_names_and_uuids_and_the_page_is_cut():
    snapshot = _snapshot()
    assert [h["name"] for h in host_page(snapshot, query="AMM")["hosts"]] == ["gamma"]
    assert [h["name"] for h in host_page(snapshot, query="u-b")["hosts"]] == ["beta"]
    second = host_page(snapshot, page=2, per_page=2)
    assert (second["total"], second["pages"], [h["name"] for h in second["hosts"]]) == (
        3,
        2,
        ["gamma"],
    )
    assert host_page(snapshot, page=9, per_page=2)["page"] == 2


def test_fullest_hosts_come_first_when_ordered_by_usage():
    names = [h["name"] for h in host_page(_snapshot(), order="usage")["hosts"]]
    assert names == ["gamma", "beta", "alpha"]  # 5/4, 12/16, 2/8


def test_flavors_parse_as_capacity_takes_them():
    flavor = parse_flavor("m1.large = VCPU:4, MEMORY_MB:8192")
    assert (flavor.name, flavor.resources) == ("m1.large", "VCPU:4,MEMORY_MB:8192")


@pytest.mark.parametrize(
    "text", ["m1.large", "=VCPU:1", "big=VCPU", "big=VCPU:0", "big=vcpu:1", "big=VCPU:1,"]
)
def test_malformed_flavors_are_refused(text):
    with pytest.raises(ValueError, match=r"RESOURCE_CLASS:N|NAME=RC:N"):
        parse_flavor(text)


def test_a_flavor_named_twice_is_refused():
    with pytest.raises(ValueError, match="more than once: a"):
        parse_flavors(["a=VCPU:1", "a=VCPU:2"])
