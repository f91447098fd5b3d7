"""Kafka's reserved topic id: ``Uuid.ZERO_UUID``, which a request sends for "no topic id"
(a topic named instead of identified) and a response for "unknown"."""

from __future__ import annotations

import uuid

ZERO_UUID = uuid.UUID(int=0)
