"""The config entries of DescribeConfigs topic results, built once per distinct input.

A mirror's metadata sync describes every mirrored topic of its source every cycle (30 s
by default): at 1,000 topics that is some 40,000 config entries, and building them as kio
entities through the version-independent builder cost most of an idle source broker's
CPU. A topic's entries depend only on its overrides, the broker's config layers, the
response version, whether synonyms are asked for and which keys; most topics share the
same overrides (none), so the built entries are kept by exactly those inputs and shared
between topics. Entities are immutable, so sharing them is safe.

The kept entries are dropped whenever the config layers change (a dynamic broker
config was altered), and all of them once there are more than ``MAX_KEPT`` distinct
inputs (overrides altered again and again), which keeps the cache bounded without
tracking which inputs are still in use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mirrorsim.broker.config import BrokerConfigLayers

MAX_KEPT = 10_000
"""Distinct (version, synonyms, keys, overrides) inputs kept before starting over."""

_Key = tuple[int, bool, tuple[str, ...] | None, frozenset[tuple[str, str]]]


class TopicConfigEntries:
    """One broker's built DescribeConfigs entries of topic resources."""

    def __init__(self) -> None:
        self._layers: BrokerConfigLayers | None = None
        self._entries: dict[_Key, tuple[Any, ...]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def entries(
        self,
        version: int,
        include_synonyms: bool,
        keys: tuple[str, ...] | None,
        overrides: Mapping[str, str],
        layers: BrokerConfigLayers,
        build: Callable[[], tuple[Any, ...]],
    ) -> tuple[Any, ...]:
        """The entries ``build`` makes for these inputs, built at most once while the
        layers stay equal."""
        if layers != self._layers:
            self._layers = layers
            self._entries = {}
        key = (version, include_synonyms, keys, frozenset(overrides.items()))
        found = self._entries.get(key)
        if found is None:
            if len(self._entries) >= MAX_KEPT:
                self._entries = {}
            found = self._entries[key] = build()
        return found
