"""Logging configuration for ``serve``: text lines or JSON lines.

uvicorn's own access log is turned off (``serve`` passes ``access_log=False``);
``placement_api.access`` writes the one line per request instead, with the
request id, route, latency, user and project.
"""

from __future__ import annotations

from typing import Any, Literal

LogFormat = Literal["text", "json"]

_TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Fields every JSON line carries; the access lines add theirs as extra keys.
_JSON = "%(asctime)s %(levelname)s %(name)s %(message)s"


def logging_config(log_format: LogFormat, level: str) -> dict[str, Any]:
    """A ``logging.config.dictConfig`` document, also accepted by uvicorn's ``log_config``."""
    formatter: dict[str, Any]
    if log_format == "json":
        formatter = {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": _JSON,
            "rename_fields": {"levelname": "level", "asctime": "time", "name": "logger"},
        }
    else:
        formatter = {"format": _TEXT}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"default": formatter},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "default",
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"handlers": ["stderr"], "level": level.upper()},
        "loggers": {
            # uvicorn's loggers propagate to the root handler; none of their own.
            "uvicorn": {"handlers": [], "level": level.upper(), "propagate": True},
            "uvicorn.error": {"handlers": [], "propagate": True},
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
        },
    }
