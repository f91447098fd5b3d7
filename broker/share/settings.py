"""A share group's own settings, read from its GROUP config overrides.

ShareFetch needs the group's lock duration, isolation level and offset reset on every
request, and the overrides live in the metadata store, so each group's are read at most
once per ``ttl_ms``: a change made with IncrementalAlterConfigs applies within that time
on every broker, as a dynamic config does in Kafka once its record is replayed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from mirrorsim.broker.group.clock import Clock
from mirrorsim.broker.share.manager import READ_COMMITTED, ShareGroupSettings


class ShareGroupSettingsCache:
    def __init__(
        self, read: Callable[[str], Mapping[str, str]], clock: Clock, ttl_ms: int = 1_000
    ) -> None:
        self._read = read
        self._clock = clock
        self._ttl_ms = ttl_ms
        self._cached: dict[str, tuple[int, ShareGroupSettings]] = {}

    def __call__(self, group_id: str) -> ShareGroupSettings:
        now = self._clock.now_ms()
        cached = self._cached.get(group_id)
        if cached is not None and now - cached[0] < self._ttl_ms:
            return cached[1]
        settings = settings_of(self._read(group_id))
        self._cached[group_id] = (now, settings)
        return settings


def settings_of(overrides: Mapping[str, str]) -> ShareGroupSettings:
    lock = overrides.get("share.record.lock.duration.ms")
    return ShareGroupSettings(
        auto_offset_reset=overrides.get("share.auto.offset.reset", "latest"),
        isolation_level=READ_COMMITTED
        if overrides.get("share.isolation.level") == "read_committed"
        else 0,
        record_lock_duration_ms=None if lock is None else int(lock),
    )
