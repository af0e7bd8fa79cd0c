"""The scheduler's HTTP service (FastAPI).

``POST /v1/schedule`` answers selections with alternates and the explanation,
or 409 ``scheduler.no_valid_host`` with the explanation; ``POST /v1/release``
gives claims back; ``GET /v1/filters`` and ``/v1/weighers`` show what is
enabled; ``GET /health`` and ``GET /metrics`` are for operators. Errors use
the Placement error body, with scheduler codes.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http import HTTPStatus
from typing import Annotated, Any

import httpx
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from flavors.extra_specs import UnsupportedExtraSpec
from placement_client import PlacementClient, PlacementError
from scheduler.answers.explain import InstanceExplanation
from scheduler.answers.results import (
    ErrorBody,
    FilterInfo,
    FiltersResponse,
    MoveFinished,
    MoveResponse,
    NoValidHostBody,
    ReleaseRequest,
    ReleaseResponse,
    ScheduleResponse,
    WeigherInfo,
    WeighersResponse,
)
from scheduler.deciding.engine import Scheduler
from scheduler.deciding.errors import NoValidHostError, PlacementRejectedError
from scheduler.deciding.moving import MoveError, Mover
from scheduler.deciding.pipeline import Pipeline
from scheduler.placement.client import SchedulerPlacement
from scheduler.plugins import FILTERS, WEIGHERS, external
from scheduler.request.move import MoveRequest
from scheduler.request.spec import ScheduleRequest
from scheduler.serving.metrics import Metrics
from scheduler.settings import SchedulerSettings, get_settings

NO_VALID_HOST = "scheduler.no_valid_host"
INVALID_REQUEST = "scheduler.invalid_request"
PLACEMENT_REJECTED = "scheduler.placement_rejected"
PLACEMENT_UNAVAILABLE = "scheduler.placement_unavailable"


def _error(status: int, code: str, detail: str, **extra: Any) -> JSONResponse:
    entry = {
        "status": status,
        "title": HTTPStatus(status).phrase,
        "detail": detail,
        "code": code,
        "request_id": f"req-{uuid.uuid4()}",
    }
    return JSONResponse({"errors": [entry], **extra}, status_code=status)


def _scheduler(request: Request) -> Scheduler:
    found: Scheduler = request.app.state.scheduler
    return found


def _metrics(request: Request) -> Metrics:
    found: Metrics = request.app.state.metrics
    return found


def _mover(request: Request) -> Mover:
    found: Mover = request.app.state.mover
    return found


SchedulerDep = Annotated[Scheduler, Depends(_scheduler)]
MoverDep = Annotated[Mover, Depends(_mover)]
MetricsDep = Annotated[Metrics, Depends(_metrics)]


router = APIRouter()


@router.post(
    "/v1/schedule",
    operation_id="schedule",
    response_model=ScheduleResponse,
    responses={
        400: {"model": ErrorBody, "description": "The request is invalid."},
        409: {"model": NoValidHostBody, "description": "No valid host, with explanation."},
        502: {"model": ErrorBody, "description": "Placement answered unexpectedly."},
        503: {"model": ErrorBody, "description": "Placement could not be reached."},
    },
)
async def schedule(
    body: ScheduleRequest, scheduler: SchedulerDep, metrics: MetricsDep
) -> ScheduleResponse | JSONResponse:
    """Choose a host for each instance, claim it, and explain the decision
    (``dry_run``: decide and explain only; nothing is claimed)."""
    started = time.perf_counter()
    try:
        result = await scheduler.schedule(body)
    except NoValidHostError as exc:
        metrics.decisions.labels("no_valid_host").inc()
        if exc.explanation.failure is not None:
            metrics.no_valid_host.labels(exc.explanation.failure.stage).inc()
        _count_conflicts(metrics, exc.explanation.instances)
        explanation = exc.explanation.model_dump(mode="json")
        return _error(409, NO_VALID_HOST, exc.message, explanation=explanation)
    finally:
        metrics.decision_seconds.observe(time.perf_counter() - started)
    if result.dry_run:
        metrics.decisions.labels("dry_run").inc()
        return result
    metrics.decisions.labels("placed").inc()
    metrics.instances.inc(len(result.selections))
    _count_conflicts(metrics, result.explanation.instances)
    return result


_MOVE_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "The request is invalid."},
    404: {"model": ErrorBody, "description": "The consumer holds nothing, or has no move."},
    502: {"model": ErrorBody, "description": "Placement answered unexpectedly."},
    503: {"model": ErrorBody, "description": "Placement could not be reached."},
}


@router.post(
    "/v1/move",
    operation_id="move",
    response_model=MoveResponse,
    responses=_MOVE_ERRORS
    | {
        409: {
            "model": NoValidHostBody,
            "description": "No valid host (with explanation), or a move already in progress.",
        }
    },
)
async def move(
    body: MoveRequest, mover: MoverDep, metrics: MetricsDep
) -> MoveResponse | JSONResponse:
    """Choose and claim a destination for an existing consumer; its source allocations
    go to its migration consumer in the same write (docs/moves.md)."""
    try:
        result = await mover.move(body)
    except NoValidHostError as exc:
        metrics.decisions.labels("no_valid_host").inc()
        explanation = exc.explanation.model_dump(mode="json")
        return _error(409, NO_VALID_HOST, exc.message, explanation=explanation)
    metrics.decisions.labels("moved").inc()
    return result


@router.post(
    "/v1/move/{consumer_uuid}/confirm",
    operation_id="confirm_move",
    response_model=MoveFinished,
    responses=_MOVE_ERRORS,
)
async def confirm_move(consumer_uuid: uuid.UUID, mover: MoverDep) -> MoveFinished:
    """Finish the move: drop the source allocations the migration consumer holds."""
    return await mover.confirm(str(consumer_uuid))


@router.post(
    "/v1/move/{consumer_uuid}/revert",
    operation_id="revert_move",
    response_model=MoveFinished,
    responses=_MOVE_ERRORS | {409: {"model": ErrorBody, "description": "Placement refused."}},
)
async def revert_move(consumer_uuid: uuid.UUID, mover: MoverDep) -> MoveFinished:
    """Undo the move: the consumer gets its source allocations back, in one write."""
    return await mover.revert(str(consumer_uuid))


@router.post("/v1/release", operation_id="release", response_model=ReleaseResponse)
async def release(body: ReleaseRequest, scheduler: SchedulerDep) -> ReleaseResponse:
    """Give back the consumers' claims (delete their allocations in Placement)."""
    result = await scheduler.release([str(c) for c in body.consumer_uuids])
    if result.failed:
        consumer, why = next(iter(result.failed.items()))
        raise PlacementError("DELETE", f"/allocations/{consumer}", None, why)
    return ReleaseResponse(released=result.released, not_found=result.not_found)


@router.get("/v1/filters", operation_id="list_filters", response_model=FiltersResponse)
async def filters(scheduler: SchedulerDep) -> FiltersResponse:
    """The enabled filters in the order they run."""
    enabled = [
        FilterInfo(
            name=f.name,
            description=f.description,
            position=i,
            runs_on_forced_hosts=f.runs_on_forced_hosts,
        )
        for i, f in enumerate(scheduler.pipeline.filters)
    ]
    return FiltersResponse(
        enabled=enabled, available=external.available(FILTERS, external.FILTER_GROUP)
    )


@router.get("/v1/weighers", operation_id="list_weighers", response_model=WeighersResponse)
async def weighers(scheduler: SchedulerDep) -> WeighersResponse:
    """The weighers that count (multiplier not 0) and their effective multipliers."""
    enabled = [
        WeigherInfo(
            name=w.plugin.name,
            description=w.plugin.description,
            position=i,
            multiplier=w.multiplier,
        )
        for i, w in enumerate(scheduler.pipeline.weighers)
    ]
    strategy = scheduler.settings.strategy
    return WeighersResponse(
        strategy=strategy,
        enabled=enabled,
        available=external.available(WEIGHERS, external.WEIGHER_GROUP),
    )


@router.get("/health", operation_id="health")
async def health(scheduler: SchedulerDep) -> JSONResponse:
    """200 when Placement answers, 503 when it does not."""
    reachable = await scheduler.client.ping()
    body = {"status": "ok" if reachable else "degraded", "placement_reachable": reachable}
    return JSONResponse(body, status_code=200 if reachable else 503)


@router.get("/metrics", operation_id="metrics", response_class=Response)
async def metrics(metrics: MetricsDep) -> Response:
    """Prometheus metrics."""
    return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)


def create_app(
    settings: SchedulerSettings | None = None,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
) -> FastAPI:
    settings = settings or get_settings()
    pipeline = Pipeline.from_settings(settings)  # a bad plugin name stops start-up

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        client = SchedulerPlacement(
            PlacementClient.connect(
                settings.auth_options(), timeout=settings.request_timeout, transport=transport
            )
        )
        app.state.scheduler = scheduler = Scheduler(settings, client, pipeline=pipeline)
        app.state.mover = Mover(scheduler)
        await scheduler.start()
        try:
            yield
        finally:
            await scheduler.aclose()
            await client.aclose()

    app = FastAPI(
        title="placement-scheduler",
        version="1.0",
        description=(
            "Chooses hosts for instances from Placement allocation candidates through "
            "filters and weighers, claims them, and explains every decision."
        ),
        lifespan=lifespan,
    )
    app.state.metrics = Metrics()
    _install_error_handlers(app)
    app.include_router(router)
    return app


def _count_conflicts(metrics: Metrics, instances: list[InstanceExplanation]) -> None:
    conflicts = sum(1 for i in instances for a in i.claims if a.outcome == "conflict")
    if conflicts:
        metrics.claim_conflicts.inc(conflicts)


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
        detail = f"{where}: {first['msg']}" if where else str(first["msg"])
        return _error(400, INVALID_REQUEST, detail)

    @app.exception_handler(UnsupportedExtraSpec)
    async def unsupported(request: Request, exc: UnsupportedExtraSpec) -> JSONResponse:
        return _error(400, INVALID_REQUEST, str(exc))

    @app.exception_handler(MoveError)
    async def cannot_move(request: Request, exc: MoveError) -> JSONResponse:
        return _error(exc.status, exc.code, exc.detail)

    @app.exception_handler(PlacementRejectedError)
    async def rejected(request: Request, exc: PlacementRejectedError) -> JSONResponse:
        return _error(400, PLACEMENT_REJECTED, f"Placement rejected the query: {exc}")

    @app.exception_handler(PlacementError)
    async def unavailable(request: Request, exc: PlacementError) -> JSONResponse:
        status = 503 if exc.status is None else 502
        return _error(status, PLACEMENT_UNAVAILABLE, str(exc))
