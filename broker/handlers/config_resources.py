"""Kafka's ``ConfigResource.Type`` numbering, shared by the config handlers."""

from __future__ import annotations

import enum


class ConfigResourceType(enum.IntEnum):
    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32
