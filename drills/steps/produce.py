"""Producer steps: workloads, explicit records (tombstones included), scripted
transactions, and moving a producer to the other cluster."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from aiokafka import AIOKafkaProducer

from mirrorsim.drills.context import Ack, DrillContext
from mirrorsim.drills.workloads import ProducerSpec, ProducerWorkload


async def produce(
    ctx: DrillContext,
    name: str,
    cluster: str,
    topic: str,
    records: int | None = None,
    duration: float | None = None,
    rate: float | None = None,
    keyed: bool = True,
    key_space: int = 100,
    compression: str | None = None,
    transactional: bool = False,
    value_bytes: int = 100,
    background: bool = False,
) -> None:
    """Write ``records`` records (or for ``duration`` seconds), ``rate`` per second at
    most; ``background`` returns at once and the workload runs on."""
    if records is None and duration is None:
        raise ValueError(f"producer {name}: give records or duration")
    workload = ProducerWorkload(
        ctx,
        ProducerSpec(
            name,
            cluster,
            topic,
            records,
            duration,
            rate,
            keyed,
            key_space,
            compression,
            transactional,
            value_bytes,
        ),
    )
    ctx.producers[name] = workload
    workload.start()
    ctx.mark("producer started", f"{name} -> {cluster}/{topic}")
    if not background:
        await workload.wait()
        ctx.mark("producer finished", f"{name}: {workload.acked} acked")


async def wait_producer(ctx: DrillContext, name: str) -> None:
    workload = ctx.producers[name]
    await workload.wait()
    ctx.mark("producer finished", f"{name}: {workload.acked} acked")


async def stop_producer(ctx: DrillContext, name: str) -> None:
    workload = ctx.producers[name]
    await workload.stop()
    ctx.mark("producer stopped", f"{name}: {workload.acked} acked")


async def move_producer(ctx: DrillContext, name: str, cluster: str) -> None:
    ctx.producers[name].move(cluster)
    ctx.mark("producer moved", f"{name} -> {cluster}")


async def produce_records(
    ctx: DrillContext,
    cluster: str,
    topic: str,
    records: list[dict[str, Any]],
    name: str = "explicit",
) -> None:
    """Each record ``{key, value, partition}``; a null value is a tombstone. Values are
    the records' ids in the ledger."""
    producer = AIOKafkaProducer(
        bootstrap_servers=ctx.cluster(cluster).bootstrap, acks="all", enable_idempotence=True
    )
    await producer.start()
    try:
        for record in records:
            value = record.get("value")
            key = record.get("key")
            meta = await producer.send_and_wait(
                topic,
                None if value is None else str(value).encode(),
                key=None if key is None else str(key).encode(),
                partition=record.get("partition", 0),
            )
            if value is not None:
                ctx.acks.append(
                    Ack(name, str(value), cluster, topic, meta.partition, meta.offset, ctx.now())
                )
    finally:
        await producer.stop()
    ctx.mark("records written", f"{len(records)} to {cluster}/{topic}")


async def transactions(
    ctx: DrillContext, cluster: str, topic: str, script: list[str], partition: int = 0
) -> None:
    """Interleaved transactions, one line per action, in order:
    ``"t1 send A=1"``, ``"t1 commit"``, ``"t2 abort"``, ``"plain send Z=10"``.
    Each ``tN`` is its own transactional producer (its own producer id) and lives until
    the drill ends, so a transaction may stay open across steps; ``plain`` is an
    idempotent producer outside any transaction. Records of a committed transaction
    (and plain ones) enter the ledger; results ``producer_ids.<tN>`` give the ids."""
    for line in script:
        actor, action, *rest = line.split()
        producer = ctx.txn_producers.get(actor)
        if producer is None:
            producer = AIOKafkaProducer(
                bootstrap_servers=ctx.cluster(cluster).bootstrap,
                acks="all",
                enable_idempotence=True,
                transactional_id=None if actor == "plain" else f"drill-{actor}",
            )
            await producer.start()
            ctx.txn_producers[actor] = producer
        pending = ctx.txn_pending
        if action == "send":
            key, value = rest[0].split("=", 1)
            if actor != "plain" and actor not in pending:
                await producer.begin_transaction()
                pending[actor] = []
            meta = await producer.send_and_wait(
                topic, value.encode(), key=key.encode(), partition=partition
            )
            record = Ack(actor, f"{key}={value}", cluster, topic, partition, meta.offset, 0.0)
            if actor == "plain":
                ctx.acks.append(record)
            else:
                pending[actor].append(record)
        elif action == "commit":
            await producer.commit_transaction()
            ctx.acks.extend(replace(a, time=ctx.now()) for a in pending.pop(actor))
        elif action == "abort":
            await producer.abort_transaction()
            pending.pop(actor)
        else:
            raise ValueError(f"transactions: unknown action in {line!r}")
        if actor != "plain":
            ctx.record_in("producer_ids", actor, producer._txn_manager.producer_id)
        ctx.mark("transaction step", line)


STEPS = {
    "produce": produce,
    "wait_producer": wait_producer,
    "stop_producer": stop_producer,
    "move_producer": move_producer,
    "produce_records": produce_records,
    "transactions": transactions,
}
