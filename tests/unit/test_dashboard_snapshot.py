"""The dashboard's snapshot: API answers joined into what the page shows, and its paging."""

from __future__ import annotations

from typing import Any

import pytest

from placement_api.dashboard.flavors import parse_flavor, parse_flavors
from placement_api.dashboard.history import History
from placement_api.dashboard.snapshot import Liveness, Reads, build_snapshot, host_page


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


def _host(uuid: str, name: str, vcpu: dict[str, Any], **more: Any) -> dict[str, Any]:
    state = {"disabled": False, "down": False, "consumers": 0, "aggregates": []}
    return {"uuid": uuid, "name": name, "resources": {"VCPU": vcpu}, **state, **more}


USAGE = {
    "resource_classes": {"VCPU": {"capacity": 28, "used": 27}},
    "aggregates": [{"uuid": "agg-1", "name": "rack1", "availability_zone": "az1", "hosts": 2}],
    "availability_zones": [{"name": "az1", "hosts": 2}],
    "counting": "root providers",
    "unavailable": {"hosts": 1, "disabled": 1, "down": 0, "included": False},
}
HOSTS = {
    "hosts": [
        _host("u-b", "beta", _figures(8, 12, ratio=2.0), aggregates=["agg-1"], consumers=3),
        _host("u-a", "alpha", _figures(8, 2), availability_zones=["az1"]),
        _host("u-c", "gamma", _figures(4, 5)),
        _host("u-d", "delta", _figures(4, 0), disabled=True),
    ],
    "sharing_providers": [
        {"uuid": "u-pool", "name": "pool", "hosts": 2, "resources": {"DISK_GB": _figures(100, 120)}}
    ],
}
FITS = {
    "one-cpu": {
        "fits": 6,
        # beta and gamma fit nothing; delta is disabled: not counted.
        "hosts": [
            {"uuid": "u-a", "fits": 6},
            {"uuid": "u-b", "fits": 0},
            {"uuid": "u-c", "fits": 0},
        ],
        "aggregates": [{"uuid": "agg-1", "fits": 6}],
        "availability_zones": [{"name": "az1", "fits": 6}],
        "unavailable": {"hosts": 1, "disabled": 1, "down": 0, "included": False, "fits": 4},
    }
}
READS = Reads(USAGE, HOSTS, FITS)


def _snapshot(liveness: Liveness | None = None, changes: list[dict[str, Any]] | None = None):
    return build_snapshot(READS, liveness or Liveness(available=False), changes or [], version=3)


def test_hosts_are_listed_by_name_with_their_fits_and_uncounted_hosts_fit_none():
    page = host_page(_snapshot())
    assert [(h["name"], h["fits"]["one-cpu"]) for h in page["hosts"]] == [
        ("alpha", 6),
        ("beta", 0),
        ("delta", None),
        ("gamma", 0),
    ]


def test_hosts_carry_state_consumers_zones_and_aggregates_by_name():
    hosts = {h["name"]: h for h in host_page(_snapshot())["hosts"]}
    assert (hosts["delta"]["disabled"], hosts["delta"]["down"]) == (True, False)
    assert (hosts["beta"]["consumers"], hosts["beta"]["aggregates"]) == (3, ["rack1"])
    assert hosts["alpha"]["zones"] == ["az1"]
    assert [h["name"] for h in host_page(_snapshot(), only="disabled")["hosts"]] == ["delta"]


def test_hosts_left_out_are_counted_apart_with_what_they_would_add():
    summary = _snapshot().summary
    assert summary["unavailable"] == {"hosts": 1, "down": 0, "disabled": 1, "fits": {"one-cpu": 4}}
    assert summary["host_count"] == 3


def test_the_heartbeats_give_liveness_and_utilisation():
    beats = (
        {"resource_provider_uuid": "u-a", "name": "alpha", "alive": True, "last_seen": "t1",
         "down_after": "t2", "metrics": {"cpu.percent": 12.5, "other": 1.0}},
        {"resource_provider_uuid": "u-c", "name": "gamma", "alive": False, "last_seen": "t0",
         "down_after": "t1", "metrics": {}},
    )  # fmt: skip
    snapshot = _snapshot(Liveness(available=True, now="now", beats=beats))
    hosts = {h["name"]: h for h in host_page(snapshot)["hosts"]}
    assert (hosts["alpha"]["utilisation"], hosts["alpha"]["last_seen"]) == (
        {"cpu.percent": 12.5},
        "t1",
    )
    assert (hosts["gamma"]["down"], hosts["alpha"]["down"]) == (True, False)
    assert [b["name"] for b in snapshot.summary["liveness"]["down"]] == ["gamma"]


def test_the_history_keeps_one_sample_a_step_and_forgets_the_oldest():
    now = [0.0]
    history = History(step=60, hours=0.05, clock=lambda: now[0])  # 3 samples
    for second in range(0, 400, 30):
        now[0] = float(second)
        history.record(READS)
    samples = history.samples()
    assert [s["at"][-9:-1] for s in samples] == ["00:04:00", "00:05:00", "00:06:00"]
    assert samples[0]["classes"] == {"VCPU": {"used": 27, "capacity": 28}}
    assert samples[0]["fits"] == {"one-cpu": 6}


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


def test_down_hosts_come_from_the_heartbeats_and_unknown_liveness_says_so():
    beat = {"resource_provider_uuid": "u-b", "name": "beta", "last_seen": "t", "down_after": "t"}
    snapshot = _snapshot(Liveness(available=True, now="now", beats=({**beat, "alive": False},)))
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
    second = host_page(snapshot, page=2, per_page=3)
    assert (second["total"], second["pages"], [h["name"] for h in second["hosts"]]) == (
        4,
        2,
        ["gamma"],
    )
    assert host_page(snapshot, page=9, per_page=2)["page"] == 2


def test_fullest_hosts_come_first_when_ordered_by_usage():
    names = [h["name"] for h in host_page(_snapshot(), order="usage")["hosts"]]
    assert names == ["gamma", "beta", "alpha", "delta"]  # 5/4, 12/16, 2/8, 0/4


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


def test_without_the_host_detail_the_totals_remain_and_the_summary_says_why():
    fits_only = {"one-cpu": {**FITS["one-cpu"], "hosts": None}}
    reads = Reads(USAGE, {}, fits_only, hosts_refused="GET /capacity -> 403: no")
    snapshot = build_snapshot(reads, Liveness(available=False), [], version=1)
    assert snapshot.summary["host_detail"] == {
        "available": False,
        "reason": "GET /capacity -> 403: no",
    }
    assert (snapshot.summary["fits"], snapshot.summary["host_count"]) == ({"one-cpu": 6}, None)
    assert host_page(snapshot)["hosts"] == []
