"""The test servers' ports: each pytest-xdist worker its own, none in use."""

from __future__ import annotations

import socket

import pytest

from tests.support.server import _below_ephemeral_ports, _PortAllocator


def _allocator(monkeypatch: pytest.MonkeyPatch, worker: str, workers: int) -> _PortAllocator:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(workers))
    return _PortAllocator()


def test_two_workers_are_never_given_the_same_port(monkeypatch: pytest.MonkeyPatch) -> None:
    first = _allocator(monkeypatch, "gw0", 2)
    second = _allocator(monkeypatch, "gw1", 2)
    taken_first = {first.take() for _ in range(50)}
    taken_second = {second.take() for _ in range(50)}
    assert len(taken_first) == len(taken_second) == 50
    assert not taken_first & taken_second
    first_ephemeral = _below_ephemeral_ports().stop
    assert all(port < first_ephemeral for port in taken_first | taken_second)


def test_a_port_something_listens_on_is_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    allocator = _allocator(monkeypatch, "gw1", 2)
    port = allocator.take()
    allocator._next -= 1  # the same port again, now that a server holds it
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", port))
        listener.listen()
        assert allocator.take() != port
