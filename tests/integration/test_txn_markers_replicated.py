"""A transaction's COMMIT marker counts as written only once the partition's ISR has it.

Kafka appends WriteTxnMarkers with acks=all: a marker only the leader holds is lost
when a follower that lacks it takes over, and a coordinator that took the leader's
acknowledgement for done would never send it again. The partition would keep the
transaction open for ever: its last stable offset stuck, the committed records never
delivered to a read_committed consumer, and a mirror of it (which copies up to the
source's last stable offset) stalled with it.
"""

from __future__ import annotations

from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from helpers.replication import FAST, broker, create_topic, stop

TOPIC = "payments"
CONFIGS = {
    **FAST,
    # a follower that stopped fetching stays in the ISR for the whole test
    "replica.lag.time.max.ms": 60_000,
    "controlled.shutdown.enable": "false",
    "transaction.state.log.num.partitions": 1,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 200,
}


async def committed_values(bootstrap: str) -> list[bytes]:
    """What a read_committed consumer reads now, from the start to the last stable offset."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        isolation_level="read_committed",
    )
    await consumer.start()
    try:
        consumer.assign([TopicPartition(TOPIC, 0)])
        batch = await consumer.getmany(timeout_ms=500)
        return [m.value for messages in batch.values() for m in messages]
    finally:
        await consumer.stop()


async def test_a_commit_marker_only_the_old_leader_had_is_written_again_on_the_new_one(
    start_cluster: Any, wait_for: Any
) -> None:
    cluster = await start_cluster(brokers=2, configs=CONFIGS)
    await create_topic(cluster, TOPIC, replicas=(1, 2))
    producer = AIOKafkaProducer(
        bootstrap_servers=cluster.bootstrap, transactional_id="payer", acks=-1
    )
    await producer.start()
    try:
        await producer.begin_transaction()
        await producer.send_and_wait(TOPIC, b"paid", partition=0)
        # the follower stops fetching (cut off from the leader) but stays in the ISR
        follower = broker(cluster, 2)
        assert follower.replica_manager.fetchers is not None
        follower.replica_manager.fetchers.unfollow(TOPIC, 0)
        await producer.commit_transaction()
    finally:
        await producer.stop()
    leader = broker(cluster, 1).replica_manager.partition(TOPIC, 0)
    await wait_for(
        lambda: leader.log_end_offset == 2, message="the leader appended the COMMIT marker"
    )
    assert follower.replica_manager.partition(TOPIC, 0).log_end_offset == 1
    # the leader goes; the follower, in the ISR without the marker, takes over
    await stop(cluster, 1)

    async def delivered() -> bool:
        return await committed_values(f"{follower.host}:{follower.port}") == [b"paid"]

    await wait_for(delivered, timeout=30, message="the committed record delivered")
