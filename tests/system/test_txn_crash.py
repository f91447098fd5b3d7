"""The transaction coordinator crashes between EndTxn and its markers.

The broker runs as an OS process (``mirrorsim up``). The crash must land after the
PrepareCommit is durable and before any marker is written; killing at a random moment
cannot aim that precisely, so the first run sets ``transaction.fault.stop.before.markers``
(the coordinator persists Prepare* and never sends its markers), and the process is then
SIGKILLed: no clean shutdown, no log close, no snapshot. The second run, without the
fault, must find the PrepareCommit in the metadata store and write the markers; the LSO
advances, read_committed consumers see each record once and the log holds one COMMIT.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from mirrorsim.client.connection import BrokerConnection
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.records import (
    ControlRecordType,
    TransactionMarker,
    decode_control_batch,
    iter_batches,
)

pytestmark = [pytest.mark.system, pytest.mark.slow]

TOPIC = "payments"
MIRRORSIM = str(Path(sys.executable).with_name("mirrorsim"))


def write_config(path: Path, data_dir: Path, port: int, *, fault: bool) -> Path:
    path.write_text(
        "[cluster.primary]\n"
        "brokers = 1\n"
        'host = "127.0.0.1"\n'
        f"port = {port}\n"
        f'data_dir = "{data_dir}"\n'
        "[cluster.primary.config]\n"
        f'"transaction.fault.stop.before.markers" = {"true" if fault else "false"}\n'
    )
    return path


@asynccontextmanager
async def broker_process(config: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    process = await asyncio.create_subprocess_exec(
        MIRRORSIM,
        "up",
        "--config",
        str(config),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None
        while True:
            line = await asyncio.wait_for(process.stdout.readline(), 60)
            assert line, "mirrorsim up exited before it was ready"
            if b"ready bootstrap=" in line:
                break
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


async def request(bootstrap: str, api_key: int, version: int, fields: dict[str, Any]) -> Any:
    host, port = bootstrap.rsplit(":", 1)
    connection = BrokerConnection(host, int(port), client_id="crash-test")
    await connection.connect()
    try:
        return await connection.send(build_request(api_key, version, fields))
    finally:
        await connection.close()


async def last_stable_offset(bootstrap: str) -> int:
    response = await request(
        bootstrap,
        2,
        5,
        {
            "replica_id": -1,
            "isolation_level": 1,
            "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": -1}]}],
        },
    )
    return int(response.topics[0].partitions[0].offset)


async def transaction_state(bootstrap: str) -> str:
    response = await request(bootstrap, 65, 0, {"transactional_ids": ["payer"]})
    return str(response.transaction_states[0].transaction_state)


async def read_committed(bootstrap: str, end: int) -> list[bytes]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        tp = TopicPartition(TOPIC, 0)
        consumer.assign([tp])
        values: list[bytes] = []
        while await consumer.position(tp) < end:
            batch = await asyncio.wait_for(consumer.getmany(timeout_ms=200), 10)
            values.extend(m.value for messages in batch.values() for m in messages)
        return values
    finally:
        await consumer.stop()


async def test_markers_are_written_after_a_coordinator_crash(
    tmp_path: Path, free_port: Any, wait_for: Any
) -> None:
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    data_dir = tmp_path / "primary"
    config = tmp_path / "mirrorsim.toml"

    async with broker_process(write_config(config, data_dir, port, fault=True)) as first:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(TOPIC, 1, 1)])
        finally:
            await admin.close()
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="payer")
        await producer.start()
        try:
            async with producer.transaction():
                for value in (b"p1", b"p2", b"p3"):
                    await producer.send_and_wait(TOPIC, value)
        finally:
            await producer.stop()
        assert await transaction_state(bootstrap) == "PrepareCommit"
        assert await last_stable_offset(bootstrap) == 0
        os.kill(first.pid, signal.SIGKILL)
        await first.wait()

    async with broker_process(write_config(config, data_dir, port, fault=False)) as second:
        await wait_for(
            lambda: _equals(transaction_state(bootstrap), "CompleteCommit"),
            timeout=30,
            message="the restarted coordinator to complete the commit",
        )
        assert await last_stable_offset(bootstrap) == 4  # three records and the marker
        assert await read_committed(bootstrap, 4) == [b"p1", b"p2", b"p3"]
        second.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(second.wait(), 60) == 0

    markers = [
        decode_control_batch(batch)
        for segment in sorted((data_dir / "broker-1" / f"{TOPIC}-0").glob("*.log"))
        for batch in iter_batches(segment.read_bytes())
        if batch.is_control
    ]
    assert [m.kind for m in markers if isinstance(m, TransactionMarker)] == [
        ControlRecordType.COMMIT
    ]


async def _equals(value: Any, expected: str) -> bool:
    return await value == expected
