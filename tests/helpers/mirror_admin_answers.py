"""Canned answers of the scripted broker to the mirror admin requests."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from helpers.tiny_broker import response
from mirrorsim.protocol.framing import Request
from mirrorsim.protocol.messages.constants import MirrorApiKey

MIRROR_KEYS = {int(key): (0, 0) for key in MirrorApiKey}


def answer_with(
    fields: dict[str, Any] | Callable[[Request], dict[str, Any]],
) -> Callable[[Request], Awaitable[Any]]:
    async def handle(request: Request) -> Any:
        body = fields(request) if callable(fields) else fields
        return response(request.header.api_key, request.header.api_version, body)

    return handle
