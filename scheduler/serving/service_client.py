"""An async Python client for the scheduler service."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from types import TracebackType
from typing import Any, Self

import httpx

from scheduler.answers.explain import Explanation
from scheduler.answers.results import (
    FiltersResponse,
    MoveFinished,
    MoveResponse,
    ReleaseResponse,
    ScheduleResponse,
    WeighersResponse,
)
from scheduler.request.move import MoveRequest
from scheduler.request.spec import ScheduleRequest
from scheduler.settings import DEFAULT_PORT

DEFAULT_URL = f"http://127.0.0.1:{DEFAULT_PORT}"


class SchedulerServiceError(Exception):
    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail


class NoValidHostError(SchedulerServiceError):
    def __init__(self, detail: str, explanation: Explanation) -> None:
        super().__init__(409, "scheduler.no_valid_host", detail)
        self.explanation = explanation


class SchedulerClient:
    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        *,
        timeout: float = 120.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._http = httpx.AsyncClient(base_url=base_url, timeout=timeout, transport=transport)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def schedule(self, request: ScheduleRequest) -> ScheduleResponse:
        """The selections; raises ``NoValidHostError`` (with its explanation) on 409."""
        body = request.model_dump(mode="json", exclude_none=True)
        response = await self._http.post("/v1/schedule", json=body)
        if response.status_code == 409:
            payload = response.json()
            raise NoValidHostError(
                payload["errors"][0]["detail"],
                Explanation.model_validate(payload["explanation"]),
            )
        return ScheduleResponse.model_validate(self._ok(response))

    async def move(self, request: MoveRequest) -> MoveResponse:
        """The destination claimed; raises ``NoValidHostError`` when nothing fits."""
        body = request.model_dump(mode="json", exclude_none=True)
        response = await self._http.post("/v1/move", json=body)
        if response.status_code == 409 and "explanation" in response.json():
            payload = response.json()
            raise NoValidHostError(
                payload["errors"][0]["detail"],
                Explanation.model_validate(payload["explanation"]),
            )
        return MoveResponse.model_validate(self._ok(response))

    async def finish_move(self, consumer: uuid.UUID | str, action: str) -> MoveFinished:
        """``action`` "confirm" or "revert"."""
        response = await self._http.post(f"/v1/move/{consumer}/{action}")
        return MoveFinished.model_validate(self._ok(response))

    async def release(self, consumers: Iterable[uuid.UUID | str]) -> ReleaseResponse:
        body = {"consumer_uuids": [str(c) for c in consumers]}
        response = await self._http.post("/v1/release", json=body)
        return ReleaseResponse.model_validate(self._ok(response))

    async def filters(self) -> FiltersResponse:
        return FiltersResponse.model_validate(self._ok(await self._http.get("/v1/filters")))

    async def weighers(self) -> WeighersResponse:
        return WeighersResponse.model_validate(self._ok(await self._http.get("/v1/weighers")))

    @staticmethod
    def _ok(response: httpx.Response) -> Any:
        if response.status_code == 200:
            return response.json()
        try:
            first = response.json()["errors"][0]
            code, detail = str(first["code"]), str(first["detail"])
        except (ValueError, KeyError, IndexError, TypeError):
            code, detail = "", response.text
        raise SchedulerServiceError(response.status_code, code, detail)
