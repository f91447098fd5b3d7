"""A broker that will be restarted on its port takes one outside the ephemeral range, so
no client connection can take it while the broker is down."""

from __future__ import annotations

import socket

from mirrorsim.broker.ports import (
    LOWEST_CANDIDATE,
    METRICS_PORT_OFFSET,
    ephemeral_low,
    restartable_base,
    restartable_port,
)


def test_the_port_and_its_metrics_port_are_free_and_below_the_ephemeral_range() -> None:
    for _ in range(50):
        port = restartable_port()
        assert LOWEST_CANDIDATE <= port < port + METRICS_PORT_OFFSET < ephemeral_low()
        for bound in (port, port + METRICS_PORT_OFFSET):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.bind(("127.0.0.1", bound))


def test_a_base_gives_consecutive_restartable_ports() -> None:
    for _ in range(50):
        base = restartable_base(3)
        assert LOWEST_CANDIDATE <= base < base + 2 + METRICS_PORT_OFFSET < ephemeral_low()
        for port in range(base, base + 3):
            for bound in (port, port + METRICS_PORT_OFFSET):
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                    sock.bind(("127.0.0.1", bound))


def test_outgoing_connections_never_take_such_ports() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        clients = [socket.create_connection(server.getsockname()) for _ in range(50)]
        try:
            assert all(c.getsockname()[1] >= ephemeral_low() for c in clients)
        finally:
            for client in clients:
                client.close()
