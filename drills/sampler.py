"""The timeline: mirror lag, partition states and workload counters sampled while a
drill runs. A sample of a cluster that is down records nothing for it rather than
stalling the run."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from mirrorsim.drills.context import DrillContext
from mirrorsim.protocol.errors import KafkaError

SAMPLE_INTERVAL_S = 0.25
DESCRIBE_TIMEOUT_S = 1.0


@dataclass(frozen=True, slots=True)
class Sample:
    time: float
    acked: int
    consumed: int
    lag: dict[str, int] = field(default_factory=dict)
    states: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class TimelineSampler:
    def __init__(self, ctx: DrillContext, interval: float = SAMPLE_INTERVAL_S) -> None:
        self.ctx = ctx
        self.interval = interval
        self.samples: list[Sample] = []
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="drill timeline")

    async def stop(self) -> None:
        """Cancel the sampling loop until it has ended: before Python 3.12 the
        ``asyncio.wait_for`` around a sample swallows a cancellation that lands as the
        sample completes, and the loop would go on sampling while the drill waits for it
        to stop."""
        task, self._task = self._task, None
        while task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=1.0)
        if task is not None and not task.cancelled():
            task.result()

    async def _run(self) -> None:
        while True:
            self.samples.append(await self.sample())
            await asyncio.sleep(self.interval)

    async def sample(self) -> Sample:
        from mirrorsim.drills.steps.mirror import describe_partitions

        lags: dict[str, int] = {}
        states: Counter[str] = Counter()
        for link in list(self.ctx.mirrors.values()):
            if not self.ctx.cluster(link.destination).running:
                continue
            try:
                partitions = await asyncio.wait_for(
                    describe_partitions(self.ctx, link.destination, link.name),
                    DESCRIBE_TIMEOUT_S,
                )
            except (TimeoutError, KafkaError, OSError):
                continue
            label = f"{link.name}@{link.destination}"
            lags[label] = sum(max(0, p.lag) for p in partitions.values())
            states.update(p.state for p in partitions.values())
        consumed = sum(len(c.seen) for c in self.ctx.consumers.values())
        return Sample(self.ctx.now(), len(self.ctx.acks), consumed, lags, dict(states))
