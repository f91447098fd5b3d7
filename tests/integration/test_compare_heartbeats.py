"""MM2-style heartbeats: emitted every pass, replicated hop by hop, hops counted by name."""

from __future__ import annotations

from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition as AioTopicPartition

from mirrorsim.compare.kafka_io import consume_until, create_topics_if_missing
from mirrorsim.compare.mirror_client import hops
from mirrorsim.compare.mm2 import MM2Config, MM2Replicator
from mirrorsim.compare.mm2_records import Heartbeat, decode_heartbeat
from mirrorsim.compare.outcome import read_offsets_by_value
from mirrorsim.compare.scenario import running_cluster


async def _heartbeats(bootstrap: str, topic: str) -> list[tuple[str, str]]:
    """(source alias, target alias) of every heartbeat in the topic, oldest first."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        tp = AioTopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        ends = await consumer.end_offsets([tp])
        found: list[Heartbeat] = []
        async for _, records in consume_until(consumer, ends, timeout_s=30):
            found += [decode_heartbeat(r.key, r.value) for r in records]
        return [(h.source_alias, h.target_alias) for h in found]
    finally:
        await consumer.stop()


def _flow(source: str, source_bootstrap: str, target: str, target_bootstrap: str) -> MM2Config:
    return MM2Config(
        source_alias=source,
        target_alias=target,
        source_bootstrap=source_bootstrap,
        target_bootstrap=target_bootstrap,
        topics="orders|a\\.orders",
    )


async def test_chain_replicates_heartbeats_and_counts_hops(tmp_path: Path) -> None:
    async with (
        running_cluster("a", tmp_path) as a,
        running_cluster("b", tmp_path) as b,
        running_cluster("c", tmp_path) as c,
    ):
        await create_topics_if_missing(a.bootstrap, {"orders": 1})
        producer = AIOKafkaProducer(bootstrap_servers=a.bootstrap, acks="all")
        await producer.start()
        try:
            await producer.send_and_wait("orders", b"o-1", partition=0)
        finally:
            await producer.stop()

        async with MM2Replicator(_flow("a", a.bootstrap, "b", b.bootstrap)) as a_to_b:
            await a_to_b.replicate_until_caught_up(timeout_s=60)
            # A→B's heartbeat connector writes to B; the heartbeat-only B→A flow writes to
            # A, and A→B copies that topic to B as a.heartbeats in the same pass.
            assert await _heartbeats(b.bootstrap, "heartbeats") == [("a", "b")]
            assert await _heartbeats(a.bootstrap, "heartbeats") == [("b", "a")]
            assert await _heartbeats(b.bootstrap, "a.heartbeats") == [("b", "a")]
            stats = await a_to_b.replicate_until_caught_up(timeout_s=60)
            assert await _heartbeats(b.bootstrap, "a.heartbeats") == [("b", "a")] * 2
            assert (stats.records, stats.heartbeats, stats.heartbeats_replicated) == (1, 4, 2)

        async with MM2Replicator(_flow("b", b.bootstrap, "c", c.bootstrap)) as b_to_c:
            await b_to_c.replicate_until_caught_up(timeout_s=60)
            # B's own heartbeats (from A→B and from the heartbeat-only C→B flow) arrive as
            # b.heartbeats; A's, already one hop old on B, as b.a.heartbeats.
            assert await _heartbeats(c.bootstrap, "b.a.heartbeats") == [("b", "a")] * 2
            assert await _heartbeats(c.bootstrap, "b.heartbeats") == [
                ("a", "b"),
                ("a", "b"),
                ("c", "b"),
            ]
            assert await read_offsets_by_value(c.bootstrap, "b.a.orders", 1) == [{b"o-1": 0}]

        assert await hops(c.bootstrap, "a") == 2
        assert await hops(c.bootstrap, "b") == 1
        assert await hops(b.bootstrap, "a") == 1
        assert await hops(a.bootstrap, "b") == -1
        assert await hops(c.bootstrap, "c") == -1
