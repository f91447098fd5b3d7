"""Ports a broker can bind again after it restarts.

"Any free port" (binding port 0) gets a port from the kernel's ephemeral range, the range
outgoing connections take their local ports from. A broker restarted on the port it had
(its clients' bootstrap lists it) can then find the port taken by some client's
connection while it was down, and fail with EADDRINUSE. Ports below the ephemeral range
are never handed out that way, so a broker that will be restarted takes one of those.

The broker binds a second port derived from its own: its metrics endpoint at port +
``METRICS_PORT_OFFSET`` (unless ``metrics.port`` is set). That port is rebound on restart
too, so it must also be free and below the ephemeral range.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
DEFAULT_EPHEMERAL_LOW = 32768
LOWEST_CANDIDATE = 10000
ATTEMPTS = 200
METRICS_PORT_OFFSET = 1000


def ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (Linux), or the usual default."""
    try:
        return int(EPHEMERAL_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return DEFAULT_EPHEMERAL_LOW


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def _restartable(host: str, port: int) -> bool:
    """``port`` and the metrics port derived from it are both free."""
    return _bindable(host, port) and _bindable(host, port + METRICS_PORT_OFFSET)


def free_port(host: str = "127.0.0.1") -> int:
    """Any port free on ``host`` right now, from the ephemeral range (for a process that
    will not be restarted on it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def restartable_port(host: str = "127.0.0.1") -> int:
    """A free port whose derived metrics port is free too, both below the ephemeral range;
    any free port if that range has none."""
    high = ephemeral_low() - METRICS_PORT_OFFSET
    if high - LOWEST_CANDIDATE > ATTEMPTS:
        for port in random.sample(range(LOWEST_CANDIDATE, high), ATTEMPTS):
            if _restartable(host, port):
                return port
    return free_port(host)


def restartable_base(count: int, host: str = "127.0.0.1") -> int:
    """The first of ``count`` consecutive restartable ports (for a cluster whose broker k
    listens on base + k - 1); 0 (any free port) if none is found."""
    high = ephemeral_low() - METRICS_PORT_OFFSET
    if high - LOWEST_CANDIDATE > ATTEMPTS + count:
        for base in random.sample(range(LOWEST_CANDIDATE, high - count), ATTEMPTS):
            if all(_restartable(host, base + k) for k in range(count)):
                return base
    return 0
