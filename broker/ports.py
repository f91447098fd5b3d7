"""Ports a broker can bind again after it restarts.

"Any free port" (binding port 0) gets a port from the kernel's ephemeral range, the range
outgoing connections take their local ports from. A broker restarted on the port it had
(its clients' bootstrap lists it) can then find the port taken by some client's
connection while it was down, and fail with EADDRINUSE. Ports below the ephemeral range
are never handed out that way, so a broker that will be restarted takes one of those.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
DEFAULT_EPHEMERAL_LOW = 32768
LOWEST_CANDIDATE = 10000
ATTEMPTS = 200


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


def restartable_port(host: str = "127.0.0.1") -> int:
    """A free port below the ephemeral range; any free port if that range has none."""
    high = ephemeral_low()
    if high - LOWEST_CANDIDATE > ATTEMPTS:
        for port in random.sample(range(LOWEST_CANDIDATE, high), ATTEMPTS):
            if _bindable(host, port):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def restartable_base(count: int, host: str = "127.0.0.1") -> int:
    """The first of ``count`` consecutive free ports below the ephemeral range (for a
    cluster whose broker k listens on base + k - 1); 0 (any free port) if none is found."""
    high = ephemeral_low()
    if high - LOWEST_CANDIDATE > ATTEMPTS + count:
        for base in random.sample(range(LOWEST_CANDIDATE, high - count), ATTEMPTS):
            if all(_bindable(host, base + k) for k in range(count)):
                return base
    return 0
