"""Concurrent LME questions of one mirror share one LastMirroredEpochs request."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, cast

import pytest

from mirrorsim.coordinator.last_mirrored_epochs import LastMirroredEpochQueries
from mirrorsim.protocol.errors import ErrorCode, KafkaError

ORDERS, PAYMENTS = uuid.uuid4(), uuid.uuid4()


class FakeSources:
    """Answers partition * 10 for topic ``orders``, -1 elsewhere, and records each request."""

    def __init__(self, fail: bool = False) -> None:
        self.requests: list[tuple[str, dict[tuple[str, uuid.UUID], list[int]]]] = []
        self.fail = fail

    async def last_mirrored_epochs(
        self, mirror: str, wanted: Mapping[tuple[str, uuid.UUID], Iterable[int]]
    ) -> dict[tuple[str, int], int]:
        asked = {topic: sorted(partitions) for topic, partitions in wanted.items()}
        self.requests.append((mirror, asked))
        await asyncio.sleep(0)
        if self.fail:
            raise KafkaError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "refused")
        return {
            (topic, p): p * 10 if topic == "orders" else -1
            for (topic, _), partitions in asked.items()
            for p in partitions
        }


def queries(sources: FakeSources) -> LastMirroredEpochQueries:
    return LastMirroredEpochQueries(cast(Any, sources))


async def test_questions_asked_together_travel_in_one_request_per_mirror() -> None:
    sources = FakeSources()
    lmes = queries(sources)
    answers = await asyncio.gather(
        *(lmes.last_mirrored_epoch("m", "orders", ORDERS, p) for p in range(50)),
        *(lmes.last_mirrored_epoch("m", "payments", PAYMENTS, p) for p in range(3)),
        lmes.last_mirrored_epoch("other", "orders", ORDERS, 7),
    )
    assert answers == [p * 10 for p in range(50)] + [-1, -1, -1] + [70]
    assert sorted(sources.requests, key=lambda r: r[0]) == [
        ("m", {("orders", ORDERS): list(range(50)), ("payments", PAYMENTS): [0, 1, 2]}),
        ("other", {("orders", ORDERS): [7]}),
    ]
    await lmes.close()


async def test_a_refused_request_fails_every_question_it_carried() -> None:
    lmes = queries(FakeSources(fail=True))
    outcomes = await asyncio.gather(
        *(lmes.last_mirrored_epoch("m", "orders", ORDERS, p) for p in range(4)),
        return_exceptions=True,
    )
    assert all(isinstance(o, KafkaError) for o in outcomes)
    with pytest.raises(KafkaError):
        await lmes.last_mirrored_epoch("m", "orders", ORDERS, 0)
    await lmes.close()
