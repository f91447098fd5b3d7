"""A broker builds a topic's DescribeConfigs entries once per distinct overrides, version,
synonyms flag and keys, shares them between topics, and builds again once the broker's
config layers change or too many inputs were kept."""

from __future__ import annotations

from typing import Any

from mirrorsim.broker.config import BrokerConfigLayers
from mirrorsim.broker.handlers import topic_config_entries
from mirrorsim.broker.handlers.topic_config_entries import TopicConfigEntries

LAYERS = BrokerConfigLayers(static={"log.retention.hours": "168"})


class Builder:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> tuple[Any, ...]:
        self.calls += 1
        return (object(),)


def test_topics_with_the_same_inputs_share_one_build() -> None:
    cache, build = TopicConfigEntries(), Builder()
    first = cache.entries(4, False, None, {}, LAYERS, build)
    assert (
        cache.entries(4, False, None, {}, BrokerConfigLayers(static=dict(LAYERS.static)), build)
        is first
    )
    assert build.calls == 1
    for other in (
        (3, False, None, {}),
        (4, True, None, {}),
        (4, False, ("retention.ms",), {}),
        (4, False, None, {"retention.ms": "1"}),
    ):
        assert cache.entries(*other, LAYERS, build) is not first
    assert build.calls == 5
    assert cache.entries(4, False, None, {"retention.ms": "1"}, LAYERS, build)
    assert build.calls == 5


def test_changed_layers_build_again() -> None:
    cache, build = TopicConfigEntries(), Builder()
    first = cache.entries(4, False, None, {}, LAYERS, build)
    altered = BrokerConfigLayers(dynamic_default={"log.retention.ms": "1"}, static=LAYERS.static)
    assert cache.entries(4, False, None, {}, altered, build) is not first
    assert build.calls == 2
    assert len(cache) == 1


def test_the_kept_inputs_stay_bounded(monkeypatch: Any) -> None:
    monkeypatch.setattr(topic_config_entries, "MAX_KEPT", 3)
    cache, build = TopicConfigEntries(), Builder()
    for value in range(7):
        cache.entries(4, False, None, {"retention.ms": str(value)}, LAYERS, build)
        assert len(cache) <= 3
    assert build.calls == 7
