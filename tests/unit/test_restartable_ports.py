"""Consecutive ports below the ephemeral range, so that a cluster's brokers can restart
on the ports their mirrors and clients know."""

from __future__ import annotations

import socket

from mirrorsim.broker.ports import ephemeral_low, restartable_base


def test_a_base_gives_consecutive_free_ports_below_the_ephemeral_range() -> None:
    base = restartable_base(3)
    assert 0 < base and base + 2 < ephemeral_low()
    for port in range(base, base + 3):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", port))
