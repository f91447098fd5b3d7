"""Kafka's identifier formats: cluster ids are 16 random bytes in URL-safe base64 without
padding (22 characters), topic ids are UUIDs that are never the all-zero or reserved
``AAAAAAAAAAAAAAAAAAAAAQ`` metadata-topic value."""

from __future__ import annotations

import base64
import uuid

_RESERVED = {uuid.UUID(int=0), uuid.UUID(int=1)}


def new_topic_id() -> uuid.UUID:
    while True:
        candidate = uuid.uuid4()
        if candidate not in _RESERVED and not to_base64(candidate).startswith("-"):
            return candidate


def new_cluster_id() -> str:
    return to_base64(new_topic_id())


def to_base64(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def from_base64(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))
