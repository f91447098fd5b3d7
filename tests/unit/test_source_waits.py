"""Partitions that failed against their source wait for one probe per mirror instead of
each retrying on its own; a wake (a kick: a failover asked for) ends one wait at once,
and any answer from the source, even a refusal, ends them all."""

from __future__ import annotations

import asyncio

import pytest

from mirrorsim.coordinator import source_waits
from mirrorsim.coordinator.source_waits import SourceWaits
from mirrorsim.protocol.errors import ErrorCode, KafkaError


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source_waits, "FIRST_BACKOFF_S", 0.001)
    monkeypatch.setattr(source_waits, "MAX_BACKOFF_S", 0.004)


class Source:
    """A source that does not answer ``down_for`` probes, then answers with ``answer``."""

    def __init__(self, down_for: int, answer: BaseException | None = None) -> None:
        self.down_for = down_for
        self.answer = answer
        self.probes = 0

    async def __call__(self, mirror: str) -> None:
        self.probes += 1
        if self.probes <= self.down_for:
            raise ConnectionRefusedError("refused")
        if self.answer is not None:
            raise self.answer


async def test_a_thousand_waiting_partitions_share_one_probe() -> None:
    source = Source(down_for=5)
    waits = SourceWaits(source)
    waiting = [
        asyncio.create_task(waits.wait("m", ("orders", p), at_least_s=0)) for p in range(1000)
    ]
    await asyncio.gather(*waiting)
    assert source.probes == 6
    assert waits.waiting("m") == 0
    assert not any(waits.is_waiting(("orders", p)) for p in range(1000))


async def test_a_wake_ends_one_wait_while_the_source_stays_down() -> None:
    source = Source(down_for=10**9)
    waits = SourceWaits(source)
    kicked = asyncio.create_task(waits.wait("m", ("orders", 0), at_least_s=0))
    other = asyncio.create_task(waits.wait("m", ("orders", 1), at_least_s=0))
    async with asyncio.timeout(10):
        while source.probes < 3:
            await asyncio.sleep(0.001)
    waits.wake(("orders", 0))
    await kicked
    assert not other.done() and waits.is_waiting(("orders", 1))
    await waits.close()
    other.cancel()
    with pytest.raises(asyncio.CancelledError):
        await other
    assert waits.waiting("m") == 0


@pytest.mark.parametrize(
    "answer",
    [LookupError("unknown mirror m"), KafkaError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)],
)
async def test_any_answer_ends_the_waits(answer: BaseException) -> None:
    source = Source(down_for=2, answer=answer)
    waits = SourceWaits(source)
    await asyncio.gather(*(waits.wait("m", ("orders", p), at_least_s=0) for p in range(3)))
    assert source.probes == 3


async def test_a_partition_failing_again_starts_the_next_probe() -> None:
    source = Source(down_for=0)
    waits = SourceWaits(source)
    await waits.wait("m", ("orders", 0), at_least_s=0)
    await waits.wait("m", ("orders", 0), at_least_s=0)
    assert source.probes == 2
