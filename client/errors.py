"""Failures of the connection layer itself, next to the error codes a broker returns.

Broker error codes surface as ``mirrorsim.protocol.errors.KafkaError``; a request the broker
cannot serve at the version it was built for is one of them (UNSUPPORTED_VERSION), while a
dropped socket or a missing response is a connection failure the caller may retry.
"""

from __future__ import annotations

from mirrorsim.protocol.errors import ErrorCode, KafkaError, error_code_from_wire


class KafkaConnectionError(ConnectionError):
    """The broker could not be reached or the socket dropped; pending requests fail with it."""


class RequestTimedOut(TimeoutError):
    """No response arrived within request.timeout.ms."""


class UnsupportedVersion(KafkaError):
    """The broker does not support the api version a request was built for."""

    def __init__(self, api_key: int, api_version: int, supported: tuple[int, int] | None) -> None:
        where = "not at all" if supported is None else f"only v{supported[0]}..v{supported[1]}"
        super().__init__(
            ErrorCode.UNSUPPORTED_VERSION,
            f"api key {api_key} v{api_version}: the broker supports it {where}",
        )
        self.api_key = api_key
        self.api_version = api_version
        self.supported = supported


def error_from_wire(value: int, message: str | None = None) -> KafkaError | None:
    """The ``KafkaError`` a response's error code stands for, or None for NONE."""
    code = error_code_from_wire(int(value))
    if code == ErrorCode.NONE:
        return None
    if isinstance(code, ErrorCode):
        return KafkaError(code, message)
    return KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"unknown error code {code}: {message}")


def raise_for_error(value: int, message: str | None = None) -> None:
    error = error_from_wire(value, message)
    if error is not None:
        raise error
