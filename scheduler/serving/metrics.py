"""Prometheus metrics of one scheduler service (its own registry, so apps don't collide)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.decisions = Counter(
            "placement_scheduler_decisions",
            "Schedule requests by outcome.",
            ["outcome"],
            registry=self.registry,
        )
        self.no_valid_host = Counter(
            "placement_scheduler_no_valid_host",
            "Requests nothing could be found for, by the stage that emptied the list.",
            ["stage"],
            registry=self.registry,
        )
        self.instances = Counter(
            "placement_scheduler_instances_placed",
            "Instances placed (claims written).",
            registry=self.registry,
        )
        self.claim_conflicts = Counter(
            "placement_scheduler_claim_conflicts",
            "Claims Placement refused with 409.",
            registry=self.registry,
        )
        self.decision_seconds = Histogram(
            "placement_scheduler_decision_seconds",
            "Time to answer a schedule request.",
            registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
