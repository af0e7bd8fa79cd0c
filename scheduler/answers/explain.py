"""The explanation every decision carries, and the sentence a failure is summed up in.

For each instance: per filter how many hosts went in and out and why each
rejected host was rejected; the weights of the best hosts; every claim
attempt. For the request: the query sent to Placement and what came back.
When nothing is valid, ``failure`` names the stage that emptied the list.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Stage = Literal["request", "placement", "capacity", "filter", "weigher", "claim"]


class RejectedHost(BaseModel):
    host: str
    uuid: str
    reason: str


class HostNote(BaseModel):
    host: str
    uuid: str
    note: str


class FilterReport(BaseModel):
    name: str
    hosts_in: int
    hosts_out: int
    rejected: list[RejectedHost] = Field(default_factory=list)
    rejected_not_listed: int = Field(default=0, description="Rejections beyond the listed ones.")
    skipped: str | None = Field(default=None, description="Why the filter did not run.")
    noted: list[HostNote] = Field(
        default_factory=list,
        description="Hosts the filter passed with a remark (e.g. liveness unknown).",
    )

    def reasons(self, limit: int = 3) -> str:
        listed = "; ".join(entry.reason for entry in self.rejected[:limit])
        more = self.hosts_in - self.hosts_out - min(limit, len(self.rejected))
        return f"{listed}; and {more} more" if more > 0 else listed


class WeightTerm(BaseModel):
    # Frozen: the term of a weigher that does not apply is one object, shared.
    model_config = ConfigDict(frozen=True)

    weigher: str
    raw: float
    normalised: float
    multiplier: float
    weighted: float


class HostWeights(BaseModel):
    host: str
    uuid: str
    total: float
    terms: list[WeightTerm]


class ClaimAttempt(BaseModel):
    host: str
    uuid: str
    outcome: Literal["claimed", "conflict"]
    detail: str = ""
    written_with: int = Field(
        default=1,
        description=(
            "Claims in the Placement request that wrote or refused this one, this one "
            "included: claims of concurrent requests go together in one POST /allocations."
        ),
    )


class InstanceExplanation(BaseModel):
    consumer_uuid: str
    hosts_considered: int
    hosts_examined: int = Field(
        default=0,
        description=(
            "Candidate hosts checked for room and run through the filters; fewer than "
            "hosts_considered when the search stopped early (see search_stopped)."
        ),
    )
    search_stopped: str | None = Field(
        default=None,
        description="Why not every candidate host was examined (feasible_hosts_to_score).",
    )
    hosts_with_room: int = Field(
        default=0, description="Examined hosts still with room after earlier instances."
    )
    capacity_rejected: list[RejectedHost] = Field(
        default_factory=list,
        description="Hosts with no room left after earlier instances of this request.",
    )
    filters: list[FilterReport] = Field(default_factory=list)
    weighed: list[HostWeights] = Field(
        default_factory=list, description="The best hosts, best first."
    )
    chosen: HostWeights | None = None
    picked_at_random: bool = Field(
        default=False,
        description=(
            "Strategy chance: the hosts were ordered at random among every host that "
            "passed the filters, without weighing."
        ),
    )
    claims: list[ClaimAttempt] = Field(default_factory=list)


class PlacementQuery(BaseModel):
    method: Literal["GET"] = "GET"
    path: Literal["/allocation_candidates"] = "/allocation_candidates"
    query: str
    microversion: str


class FailingTerm(BaseModel):
    term: str = Field(description="One term of the query, as the query spells it.")
    hosts: int = Field(description="How many hosts fail this term on its own.")


class PlacementReport(BaseModel):
    request: PlacementQuery
    allocation_requests: int
    hosts: int
    narrowed_by: list[str] = Field(
        default_factory=list,
        description=(
            "Query terms the filters added (member_of, in_tree, no limit) so that "
            "limit cannot hide a host they would keep."
        ),
    )
    cache_age_seconds: float | None = Field(
        default=None,
        description=(
            "How old the scheduler's cached answer to this query was when the request "
            "began; null when it was read for this request."
        ),
    )
    diagnosis: list[str] = Field(
        default_factory=list,
        description="When Placement found nothing: which part of the request matched nothing.",
    )
    failing_terms: list[FailingTerm] = Field(
        default_factory=list,
        description=(
            "When Placement found nothing: for each term of the query, how many hosts "
            "fail it (each resource amount, required and forbidden trait, member_of)."
        ),
    )
    excluded: list[RejectedHost] = Field(
        default_factory=list,
        description="Candidates left out before the filters: a move's source host.",
    )


class Failure(BaseModel):
    stage: Stage
    reason: str
    instance_index: int | None = None
    consumer_uuid: str | None = None


class Explanation(BaseModel):
    placement: PlacementReport | None = None
    instances: list[InstanceExplanation] = Field(default_factory=list)
    failure: Failure | None = None
    released: list[str] = Field(
        default_factory=list, description="Consumers whose claims were given back."
    )


def emptied_by_filter(report: FilterReport) -> str:
    return f"filter {report.name} removed the last {report.hosts_in} host(s): {report.reasons()}"


def emptied_by_capacity(rejected: list[RejectedHost], limit: int = 3) -> str:
    listed = "; ".join(f"{r.host}: {r.reason}" for r in rejected[:limit])
    more = len(rejected) - limit
    suffix = f"; and {more} more" if more > 0 else ""
    return f"earlier instances of this request used up every candidate host ({listed}{suffix})"


def no_valid_host_message(explanation: Explanation, instances: int) -> str:
    failure = explanation.failure
    if failure is None:
        return "No valid host was found."
    where = ""
    if failure.instance_index is not None and instances > 1:
        where = f" for instance {failure.instance_index + 1} of {instances}"
    released = ""
    if explanation.released:
        released = (
            f" Claims already made for {len(explanation.released)} instance(s) were released."
        )
    return f"No valid host was found{where}: {failure.reason}.{released}"
