"""`kinefit serve` keeps its port: TIME_WAIT sockets of a stopped server do not count."""

from __future__ import annotations

import socket

import pytest

from flows.server import free_port, port_holder
from pipeline.errors import ServerError


def _time_wait_port() -> int:
    """A port whose server just closed a connection first (its side is now TIME_WAIT)."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    conn, _ = server.accept()
    conn.close()  # the server side closes first: TIME_WAIT on (127.0.0.1, port)
    server.close()
    client.recv(1)
    client.close()
    return port


def test_a_port_in_time_wait_is_free_again():
    port = _time_wait_port()
    with socket.socket() as plain, pytest.raises(OSError):  # the old probe: fails here
        plain.bind(("127.0.0.1", port))
    assert free_port(port) == port


def test_a_taken_port_names_the_process_holding_it():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert port_holder(port).startswith("pid ")
        with pytest.raises(ServerError, match=rf"port {port} on 127.0.0.1 is taken by pid \d+ "):
            free_port(port)
