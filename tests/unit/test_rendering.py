"""http_date writes exactly what email.utils writes for an HTTP date."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from email.utils import format_datetime

from placement_api.web.rendering import http_date


def test_http_date_is_email_utils_format() -> None:
    start = datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    # Every weekday and month, leap days, single-digit days and hours.
    moments = [start + timedelta(days=days, hours=days % 24) for days in range(0, 3000, 7)]
    for moment in moments:
        assert http_date(moment) == format_datetime(moment, usegmt=True)
        # Naive datetimes are UTC; others are converted to it.
        assert http_date(moment.replace(tzinfo=None)) == format_datetime(moment, usegmt=True)
        shifted = moment.astimezone(timezone(timedelta(hours=-5, minutes=-30)))
        assert http_date(shifted) == format_datetime(moment, usegmt=True)
