"""One LastMirroredEpochs request per source cluster for every partition preparing at once.

AddTopicsToMirror of a thousand partitions moves them all into PREPARING together, and
each asks the source for its last mirrored epoch. The RPC carries any number of topics
and partitions, and the source answers it from its own coordinators, so the questions
asked meanwhile travel together: one request per mirror instead of one per partition.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from mirrorsim.coordinator.batching import KeyedBatcher
from mirrorsim.coordinator.source_clusters import NO_EPOCH, SourceClusters


@dataclass(slots=True)
class _Question:
    topic: str
    topic_id: uuid.UUID
    partition: int
    answer: int = NO_EPOCH


class LastMirroredEpochQueries:
    """Concurrent questions of one mirror share one LastMirroredEpochs request."""

    def __init__(self, sources: SourceClusters) -> None:
        self._sources = sources
        self._batcher: KeyedBatcher[str, _Question] = KeyedBatcher(self._ask)

    async def last_mirrored_epoch(
        self, mirror: str, topic: str, topic_id: uuid.UUID, partition: int
    ) -> int:
        """The source's LME of the partition; -1 where it knows none."""
        question = _Question(topic, topic_id, partition)
        await self._batcher.submit(mirror, question)
        return question.answer

    async def _ask(self, mirror: str, questions: list[_Question]) -> None:
        wanted: dict[tuple[str, uuid.UUID], set[int]] = {}
        for q in questions:
            wanted.setdefault((q.topic, q.topic_id), set()).add(q.partition)
        answers = await self._sources.last_mirrored_epochs(mirror, wanted)
        for q in questions:
            q.answer = answers[(q.topic, q.partition)]

    async def close(self) -> None:
        await self._batcher.close()
