"""Which listening addresses only this machine can reach (``serve`` and ``dashboard`` ask)."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
