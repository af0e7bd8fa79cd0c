"""The log levels ``serve`` commands take: uvicorn's, checked when the options are
parsed, so a wrong one is a usage error naming the choices."""

from __future__ import annotations

from enum import StrEnum


class LogLevel(StrEnum):
    CRITICAL = "critical"
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    DEBUG = "debug"
    TRACE = "trace"
