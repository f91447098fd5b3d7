"""Topic creation and AddTopicsToMirror of many topics: one request is validated topic by
topic exactly as separate requests would be, but costs one metadata refresh."""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from pathlib import Path
from typing import Any

from helpers.mirrors import MIRROR, MIRROR_CONFIGS, broker_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mirrorsim.broker.metadata.controller import MetadataController, NewTopicRequest
from mirrorsim.broker.metadata.models import TopicRecord
from mirrorsim.broker.metadata.store import MetadataStore
from mirrorsim.broker.metadata.view import ClusterSnapshot
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.protocol.errors import ErrorCode, KafkaError

SOURCE_IDS = [uuid.UUID(int=1), uuid.UUID(int=2)]
NAMES = ["a.b", "a_b", "a", "b", "bad name", "c.d"]


class _Controller:
    """A controller on a real store whose metadata refreshes are counted."""

    def __init__(self, path: Path) -> None:
        self.store = MetadataStore.open(f"sqlite:///{path}")
        self.snapshot = ClusterSnapshot()
        self.refreshes = 0
        self.controller = MetadataController(
            self.store,
            broker_id=1,
            static_configs={},
            snapshot=lambda: self.snapshot,
            live_broker_ids=lambda: [1],
            on_change=self._refresh,
        )

    async def _refresh(self) -> None:
        self.refreshes += 1
        self.snapshot = self.store.snapshot()

    def stored(self) -> dict[str, tuple[int, str]]:
        return {
            name: (len(topic.partitions), str(topic.configs))
            for name, topic in self.store.topics().items()
        }


def _summary(outcome: TopicRecord | KafkaError) -> Any:
    if isinstance(outcome, KafkaError):
        return outcome.code
    return (outcome.name, len(outcome.partitions), outcome.configs)


requests = st.lists(
    st.builds(
        NewTopicRequest,
        name=st.sampled_from(NAMES),
        num_partitions=st.integers(min_value=-1, max_value=3),
        configs=st.sampled_from([None, {"retention.ms": "60000"}, {"retention.ms": "soon"}]),
        topic_id=st.sampled_from([None, None, *SOURCE_IDS, uuid.UUID(int=0)]),
    ),
    max_size=8,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests, st.booleans())
def test_one_request_decides_like_one_request_per_topic(
    batch: list[NewTopicRequest], validate_only: bool
) -> None:
    async def compare(directory: Path) -> None:
        together, one_by_one = _Controller(directory / "a.db"), _Controller(directory / "b.db")
        try:
            batched = await together.controller.create_topics(batch, validate_only=validate_only)
            alone = []
            for request in batch:
                outcome = await one_by_one.controller.create_topics(
                    [request], validate_only=validate_only
                )
                alone.extend(outcome)
            if validate_only:
                # separate validate-only requests do not see each other's topics; one
                # request does, so it refuses at least what they refuse
                assert all(
                    isinstance(b, KafkaError) or not isinstance(a, KafkaError)
                    for a, b in zip(alone, batched, strict=True)
                )
                assert together.stored() == {} and together.refreshes == 0
                return
            assert [_summary(o) for o in batched] == [_summary(o) for o in alone]
            assert together.stored() == one_by_one.stored()
            created = any(isinstance(o, TopicRecord) for o in batched)
            assert together.refreshes == (1 if created else 0)
            for request, outcome in zip(batch, batched, strict=True):
                if isinstance(outcome, TopicRecord) and request.topic_id is not None:
                    assert outcome.topic_id == request.topic_id
        finally:
            together.store.close()
            one_by_one.store.close()

    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(compare(Path(directory)))


def test_collisions_within_one_request_are_refused(tmp_path: Path) -> None:
    async def create() -> list[TopicRecord | KafkaError]:
        controller = _Controller(tmp_path / "m.db")
        try:
            return await controller.controller.create_topics(
                [
                    NewTopicRequest("x.y", 1),
                    NewTopicRequest("x_y", 1),
                    NewTopicRequest("m1", 1, topic_id=SOURCE_IDS[0]),
                    NewTopicRequest("m2", 1, topic_id=SOURCE_IDS[0]),
                ]
            )
        finally:
            controller.store.close()

    outcomes = asyncio.run(create())
    assert [_summary(o) if isinstance(o, KafkaError) else o.name for o in outcomes] == [
        "x.y",
        ErrorCode.INVALID_TOPIC_EXCEPTION,
        "m1",
        ErrorCode.TOPIC_ALREADY_EXISTS,
    ]


async def test_create_topics_of_many_topics_over_the_wire(start_cluster: Any) -> None:
    cluster = await start_cluster()
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        (await admin.create_topics([NewTopic("existing", 1, 1)])).all()
        result = await admin.create_topics(
            [NewTopic(f"t{i}", 3, 1, {"retention.ms": "60000"}) for i in range(50)]
            + [NewTopic("existing", 1, 1), NewTopic("bad name", 1, 1)]
        )
    errors = {name: exc.code for name, exc in result.failed.items()}
    assert errors == {
        "existing": ErrorCode.TOPIC_ALREADY_EXISTS,
        "bad name": ErrorCode.INVALID_TOPIC_EXCEPTION,
    }
    broker = broker_of(cluster)
    for i in range(50):
        assert len(broker.snapshot.topics[f"t{i}"].partitions) == 3
        assert broker.replica_manager.partition(f"t{i}", 2).log.config.retention_ms == 60000


async def test_add_topics_to_mirror_of_many_topics(start_cluster: Any, wait_for: Any) -> None:
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    names = [f"orders-{i}" for i in range(30)]
    async with Admin(bootstrap=source.bootstrap) as admin:
        (
            await admin.create_topics([NewTopic(n, 2, 1, {"retention.ms": "70000"}) for n in names])
        ).all()
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        result = await admin.add_topics_to_mirror(MIRROR, [*names, "absent"])
    assert {n: e.code for n, e in result.failed.items()} == {
        "absent": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    }
    source_topics = broker_of(source).snapshot.topics
    mirrored = broker_of(destination).snapshot.topics
    for name in names:
        assert mirrored[name].topic_id == source_topics[name].topic_id
        assert mirrored[name].configs == {"retention.ms": "70000", "mirror.name": MIRROR}
    statuses = broker_of(destination).mirrors.partitions

    def all_mirroring() -> bool:
        return all(
            (n, p) in statuses and statuses[(n, p)].state.name == "MIRRORING"
            for n in names
            for p in range(2)
        )

    await wait_for(all_mirroring, timeout=30, message="every partition MIRRORING")
