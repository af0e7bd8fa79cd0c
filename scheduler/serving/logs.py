"""The scheduler's log lines: each with its time, level and logger, uvicorn's included."""

from __future__ import annotations

from typing import Any

_TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def logging_config(level: str) -> dict[str, Any]:
    """A ``logging.config.dictConfig`` document for uvicorn's ``log_config``."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"default": {"format": _TEXT}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "default",
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"handlers": ["stderr"], "level": level.upper()},
        "loggers": {
            "uvicorn": {"handlers": [], "level": level.upper(), "propagate": True},
            "uvicorn.error": {"handlers": [], "propagate": True},
            "uvicorn.access": {"handlers": [], "propagate": True},
        },
    }
