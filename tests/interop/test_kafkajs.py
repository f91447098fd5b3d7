"""kafkajs 2.2.4 (node, tests/interop/node) against the broker: its codecs (kafkajs has
only none and gzip built in), keyed records with headers, and a group that resumes.

The node script reads and writes records as JSON lines, so the workload and the check are
the same as for the Python clients.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers.interop import (
    PARTITIONS,
    Consumed,
    assert_delivered,
    committed_after,
    counts,
    first_run_size,
    group_offsets,
    record_headers,
    record_key,
    record_value,
)

NODE = shutil.which("node")
SCRIPT = Path(__file__).parent / "node" / "interop.js"
KAFKAJS = Path(__file__).parent / "node" / "node_modules" / "kafkajs"
pytestmark = [
    pytest.mark.interop,
    pytest.mark.skipif(
        NODE is None or not KAFKAJS.is_dir(),
        reason="node or kafkajs is not installed (scripts/system-deps.sh)",
    ),
]
CLIENT = "kafkajs"
CODECS = ("none", "gzip")
TIMEOUT_S = 90


async def _node(*args: str, stdin: bytes | None = None) -> bytes:
    assert NODE is not None
    process = await asyncio.create_subprocess_exec(
        NODE,
        str(SCRIPT),
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(stdin), TIMEOUT_S)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode == 0, stderr.decode(errors="replace")
    return stdout


async def _produce(bootstrap: str, topic: str, codec: str, count: int) -> None:
    lines = "".join(
        json.dumps(
            {
                "key": record_key(i).decode(),
                "value": record_value(i).decode(),
                "headers": [[k, v.decode()] for k, v in record_headers(i, CLIENT)],
            }
        )
        + "\n"
        for i in range(count)
    )
    await _node("produce", bootstrap, topic, codec, stdin=lines.encode())


async def _consume(bootstrap: str, topic: str, group: str, limit: int) -> list[Consumed]:
    output = await _node("consume", bootstrap, topic, group, str(limit))
    records = []
    for line in output.splitlines():
        m = json.loads(line)
        headers = tuple((k, v.encode()) for k, v in m["headers"])
        records.append(
            Consumed(m["partition"], m["offset"], m["key"].encode(), m["value"].encode(), headers)
        )
    return records


@pytest.mark.parametrize("count", counts())
@pytest.mark.parametrize("codec", CODECS)
async def test_produce_consume_resume(
    cluster: Any, topic_names: str, codec: str, count: int
) -> None:
    topic = group = topic_names
    await _node("create-topic", cluster.bootstrap, topic, str(PARTITIONS))
    await _produce(cluster.bootstrap, topic, codec, count)
    first = await _consume(cluster.bootstrap, topic, group, first_run_size(count))
    assert await group_offsets(cluster.bootstrap, group, topic) == committed_after(first)
    second = await _consume(cluster.bootstrap, topic, group, count - len(first))
    assert_delivered(count, CLIENT, first, second)
    assert await group_offsets(cluster.bootstrap, group, topic) == committed_after(first + second)
