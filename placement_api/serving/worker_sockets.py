"""A listening socket per worker process, so the kernel spreads connections evenly.

uvicorn's workers share one listening socket, and a worker that wakes up
accepts every connection waiting on it: 64 clients connecting at once
were split 50 to 14, or 64 to 0, and kept there by keep-alive, so one
worker queued most requests while the other idled. With ``SO_REUSEPORT``
each worker listens on a socket of its own, bound to the same address,
and Linux hashes each new connection to one of them.

uvicorn hands its workers the parent's sockets by pickling them (the
``spawn`` start method). A ``ReusePortSocket`` pickles as the address it is
bound to, so each worker, and each worker started again, binds its own;
tests/e2e/test_worker_sockets.py fails if uvicorn stops handing them over so.
"""

from __future__ import annotations

import socket
import sys
from typing import Any


def reuse_port_supported() -> bool:
    """Linux spreads connections between sockets sharing a port; BSD's and
    macOS's ``SO_REUSEPORT`` lets them share it without doing so."""
    return sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


def _bound(family: int, address: tuple[Any, ...]) -> ReusePortSocket:
    sock = ReusePortSocket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


class ReusePortSocket(socket.socket):
    """A bound (not yet listening) socket; unpickled, another one on its address."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_bound, (self.family, self.getsockname()))


def reuse_port_socket(host: str, port: int) -> ReusePortSocket:
    """The parent's socket: it holds the address (a busy port fails here, at
    start-up) and never listens, so connections go only to the workers'."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return _bound(family, (host, port))
