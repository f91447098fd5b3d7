"""The broker's client quota enforcement: one sensor per quota id and quota type.

``ClientQuotas.update`` takes the configured quotas (every broker reads them from the
metadata store); ``throttle_ms`` records a request's bytes (or handler time) against the
rate of the quota that applies and answers how long the client must wait, 0 within its
quota; ``request_percentage`` throttles are bounded by one quota window, as Kafka bounds
them. A sensor is re-bound when its quota changes and keeps its recorded history, as
Kafka's metric config update does. Only ``producer_byte_rate``, ``consumer_byte_rate`` and
``request_percentage`` are ever recorded; the other keys are stored and described only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from mirrorsim.broker.quotas.entity import REQUEST_PERCENTAGE, Entity
from mirrorsim.broker.quotas.precedence import QuotaId, resolve
from mirrorsim.broker.quotas.rate import QuotaSensor, Rate, WindowConfig

SECONDS_TO_PERCENTAGE = 100.0
"""Kafka records a request's time as a percentage of one thread for one second: a request
that takes 10 ms counts 1.0 against ``request_percentage``."""


INACTIVE_SENSOR_EXPIRATION_MS = 3_600_000
"""A sensor nobody recorded on for an hour is dropped (Kafka's
``InactiveSensorExpirationTimeSeconds``), so client ids that come and go cost nothing."""


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class Client:
    """Who a request counts against: the principal's name and the request's client id."""

    user: str
    client_id: str

    @classmethod
    def of(cls, principal: str, client_id: str | None) -> Client:
        _, _, name = principal.partition(":")
        return cls(name or principal, client_id or "")


class ClientQuotas:
    def __init__(self, windows: WindowConfig, clock: Callable[[], int] = _monotonic_ms) -> None:
        self.windows = windows
        self._clock = clock
        self._quotas: Mapping[Entity, Mapping[str, float]] = {}
        self._sensors: dict[tuple[str, QuotaId], QuotaSensor] = {}
        self._last_used_ms: dict[tuple[str, QuotaId], int] = {}

    def update(self, quotas: Mapping[Entity, Mapping[str, float]]) -> None:
        """Take the configured quotas (every refresh) and drop the sensors idle too long."""
        self._quotas = quotas
        oldest = self._clock() - INACTIVE_SENSOR_EXPIRATION_MS
        for sensor_key in [k for k, used in self._last_used_ms.items() if used < oldest]:
            del self._sensors[sensor_key]
            del self._last_used_ms[sensor_key]

    @property
    def sensor_count(self) -> int:
        return len(self._sensors)

    def throttle_ms(self, key: str, client: Client, value: float) -> int:
        sensor = self._sensor(key, client)
        if sensor is None:
            return 0
        max_ms = self.windows.window_ms if key == REQUEST_PERCENTAGE else None
        return sensor.record_and_throttle_ms(value, self._clock(), max_ms)

    def unrecord(self, key: str, client: Client, value: float) -> None:
        sensor = self._sensor(key, client)
        if sensor is not None:
            sensor.unrecord(value, self._clock())

    def max_value_in_window(self, key: str, client: Client) -> float | None:
        """The most one request may carry without being throttled for certain (Kafka bounds
        a consumer's fetch size by it); None without a quota."""
        applied = resolve(self._quotas, key, client.user, client.client_id)
        if applied is None:
            return None
        seconds = self.windows.window_ms / 1000.0
        return applied.bound * (self.windows.samples - 1) * seconds

    def _sensor(self, key: str, client: Client) -> QuotaSensor | None:
        if not self._quotas:
            return None
        applied = resolve(self._quotas, key, client.user, client.client_id)
        if applied is None:
            return None
        sensor_key = (key, applied.quota_id)
        sensor = self._sensors.get(sensor_key)
        if sensor is None:
            sensor = QuotaSensor(Rate(self.windows), applied.bound)
            self._sensors[sensor_key] = sensor
        sensor.bound = applied.bound
        self._last_used_ms[sensor_key] = self._clock()
        return sensor
