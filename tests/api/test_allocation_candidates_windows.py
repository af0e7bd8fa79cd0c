"""With a limit, trees are read in windows of root ids. Shrunk to a root id
or two per window, the windowed answers must be exactly a prefix-sized
subset of the full answer, whatever the limit, on every backend, whether
windows read inventory provider by provider (small ones) or not (wide ones,
their bounds written into the statement)."""

from __future__ import annotations

import pytest

from placement_api.domain.candidates import queries, windowing
from placement_api.domain.candidates.windowing import WindowPolicy
from tests.api.test_allocation_candidates import candidates, get_ok, summary_names
from tests.support.client import PlacementClient
from tests.support.index_answers import settings_of_both_paths
from tests.support.provider_trees import TreeBuilder

# Every request here is answered with the provider index on (as shipped) and off.
settings = settings_of_both_paths

SHARES = ["MISC_SHARES_VIA_AGGREGATE"]


@pytest.fixture(params=[4096, 0], ids=["fenced", "wide"])
def fencing(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    monkeypatch.setattr(queries, "FENCED_WINDOW", request.param)


@pytest.fixture(params=[0, 100], ids=["windows", "narrow-filters"])
async def spread(
    api: PlacementClient,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    fencing: None,
) -> TreeBuilder:
    """Sharing providers with the lowest and highest ids, trees between them.
    Trait and aggregate filters either never or always count as narrow:
    then trees are taken from the list of those holding the unsuffixed
    group's traits, or all read at once."""
    policy = WindowPolicy(per_candidate=0.5, min_window=1, few_per_candidate=request.param)
    monkeypatch.setattr(windowing, "POLICY", policy)
    tree = TreeBuilder(api)
    await tree.provider("ss_low", inventory={"DISK_GB": 100}, traits=SHARES, aggregates=["a"])
    for index in range(5):
        traits = ["HW_CPU_X86_AVX2"] if index % 2 else []
        await tree.provider(
            f"host{index}", inventory={"VCPU": 4, "DISK_GB": 50}, traits=traits, aggregates=["a"]
        )
    await tree.provider("nested")
    # The trait on a child: its tree holds it, the root does not.
    await tree.provider("numa", parent="nested", inventory={"VCPU": 4}, traits=["HW_CPU_X86_AVX2"])
    await tree.set_aggregates("nested", ["a"])
    await tree.provider("ss_high", inventory={"DISK_GB": 100}, traits=SHARES, aggregates=["a"])
    return tree


@pytest.mark.parametrize(
    "query",
    [
        "resources=VCPU:1,DISK_GB:10",
        "resources=DISK_GB:10",
        "resources=VCPU:1,DISK_GB:10&required=HW_CPU_X86_AVX2",
        "resources=VCPU:1&required=HW_CPU_X86_AVX2",
        "resources=VCPU:1&required=HW_CPU_X86_AVX2,!HW_CPU_X86_SSE",
        "resources=VCPU:1,DISK_GB:10&member_of={a}",
        "resources=DISK_GB:10&member_of={a}",
        "resources1=VCPU:1&member_of1={a}&resources2=DISK_GB:10&member_of2={a}&group_policy=none",
        "resources1=VCPU:1&resources2=DISK_GB:10&group_policy=isolate",
        "resources1=VCPU:1&resources2=VCPU:1&resources3=DISK_GB:10&group_policy=none",
    ],
)
async def test_limited_answers_are_subsets_of_the_full_answer(
    api: PlacementClient, spread: TreeBuilder, query: str
) -> None:
    path = f"/allocation_candidates?{query.format(a=spread.aggregate('a'))}"
    full = candidates(spread, await get_ok(api, path))
    assert len({str(c) for c in full}) == len(full)
    for limit in range(1, len(full) + 2):
        body = await get_ok(api, f"{path}&limit={limit}")
        limited = candidates(spread, body)
        assert len(limited) == min(limit, len(full))
        assert len({str(c) for c in limited}) == len(limited)
        assert all(c in full for c in limited)
        trees = {name for c in limited for name in c}
        assert trees <= summary_names(spread, body)


@pytest.fixture
async def paged(api: PlacementClient, monkeypatch: pytest.MonkeyPatch) -> TreeBuilder:
    """No sharing providers, so trees are taken page by page from a filter's
    holders or members; a page and a window are one provider or two, and
    nothing counts as few. A child created after every other provider holds
    the traits a candidate needs from it, and its tree is reached from a page
    before it (its root's)."""
    policy = WindowPolicy(per_candidate=0.5, min_window=1, few_per_candidate=0, max_window=2)
    monkeypatch.setattr(windowing, "POLICY", policy)
    tree = TreeBuilder(api)
    for index in range(4):
        await tree.provider(
            f"host{index}",
            inventory={"VCPU": 4, "DISK_GB": 50},
            traits=["HW_CPU_X86_AVX2"] if index % 2 else [],
            aggregates=["a"] if index != 2 else [],
        )
    await tree.provider(
        "nested", inventory={"DISK_GB": 50}, traits=["HW_CPU_X86_AVX2"], aggregates=["a"]
    )
    await tree.provider("late", inventory={"VCPU": 4, "DISK_GB": 50}, traits=["HW_CPU_X86_AVX2"])
    both = ["HW_CPU_X86_AVX2", "HW_CPU_X86_SSE"]
    await tree.provider("numa0", parent="nested", inventory={"VCPU": 4}, traits=both)
    await tree.provider("numa1", parent="nested", inventory={"VCPU": 4}, traits=["HW_CPU_X86_SSE"])
    return tree


@pytest.mark.parametrize(
    "query",
    [
        "resources=VCPU:1,DISK_GB:10&required=HW_CPU_X86_AVX2",
        "resources=VCPU:1&required=HW_CPU_X86_AVX2",
        "resources=VCPU:1&required=HW_CPU_X86_AVX2,HW_CPU_X86_SSE",
        "resources=VCPU:1&required=in:HW_CPU_X86_AVX2,HW_CPU_X86_SSE",
        "resources=VCPU:1,DISK_GB:10&member_of={a}",
        "resources=VCPU:1,DISK_GB:10&member_of={a}&required=HW_CPU_X86_AVX2",
        "resources=VCPU:1&required=!HW_CPU_X86_SSE&member_of={a}",
        "resources=DISK_GB:10&resources1=VCPU:1&required1=HW_CPU_X86_SSE&group_policy=none",
        "resources1=VCPU:1&member_of1={a}&resources2=DISK_GB:10&group_policy=none",
    ],
)
async def test_trees_taken_page_by_page_give_the_full_answer(
    api: PlacementClient, paged: TreeBuilder, query: str
) -> None:
    path = f"/allocation_candidates?{query.format(a=paged.aggregate('a'))}"
    full = candidates(paged, await get_ok(api, path))
    assert full
    for limit in range(1, len(full) + 2):
        limited = candidates(paged, await get_ok(api, f"{path}&limit={limit}"))
        assert len(limited) == min(limit, len(full))
        assert len({str(c) for c in limited}) == len(limited)
        assert all(c in full for c in limited)


async def test_a_limit_of_nineteen_digits_is_every_candidate(
    api: PlacementClient, spread: TreeBuilder
) -> None:
    # Counted up to what the limit makes few: never past what SQL takes.
    path = f"/allocation_candidates?resources=VCPU:1,DISK_GB:10&member_of={spread.aggregate('a')}"
    full = candidates(spread, await get_ok(api, path))
    limited = candidates(spread, await get_ok(api, f"{path}&limit=9999999999999999999"))
    assert sorted(map(str, limited)) == sorted(map(str, full))
