"""How a decision fails: no host for the request, or a request Placement refuses."""

from __future__ import annotations

from scheduler.answers.explain import Explanation, no_valid_host_message


class NoValidHostError(Exception):
    def __init__(self, explanation: Explanation, instances: int) -> None:
        self.explanation = explanation
        self.message = no_valid_host_message(explanation, instances)
        super().__init__(self.message)


class PlacementRejectedError(Exception):
    """Placement refused the query built from the request (a 400): the request is wrong."""
