"""Error translation shared by the transaction handlers.

PRODUCER_FENCED exists since KIP-588; older request versions get INVALID_PRODUCER_EPOCH,
which is what those clients understand as "another instance took over".
"""

from __future__ import annotations

from mirrorsim.protocol.errors import ErrorCode


def for_version(code: ErrorCode, version: int, fenced_since: int) -> ErrorCode:
    if code is ErrorCode.PRODUCER_FENCED and version < fenced_since:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code
