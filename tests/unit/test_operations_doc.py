"""docs/operations.md names every metric the service exports."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.metrics import MetricWrapperBase

from placement_api.domain.inventory_figures import InventoryFigures
from placement_api.observability import metrics

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


def test_every_metric_is_documented() -> None:
    names = [
        # A counter's samples carry the _total its family name drops.
        value._name + ("_total" if value._type == "counter" else "")
        for value in vars(metrics).values()
        if isinstance(value, MetricWrapperBase)
    ]
    row = InventoryFigures("h", "VCPU", 1, 0, 0, 1.0, 0)
    names += [family.name for family in metrics.CapacityCollector([row]).collect()]
    names += [family.name for family in metrics.UpCollector(up=True).collect()]
    assert len(names) > 10
    guide = GUIDE.read_text()
    assert [name for name in names if f"`{name}`" not in guide] == []
