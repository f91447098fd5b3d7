"""kcat (librdkafka as shipped by Debian, a strict older client) as a subprocess: every
codec, keyed records with headers, and a balanced consumer group that resumes.

kcat cannot create topics, so the topic comes from the project's Admin client. kcat sets
the same headers on every record it produces (``-H``), so the check expects those.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from typing import Any

import pytest
from helpers.interop import (
    CODECS,
    Consumed,
    assert_delivered,
    committed_after,
    counts,
    create_topic,
    first_run_size,
    group_offsets,
    record_key,
    record_value,
)

KCAT = shutil.which("kcat")
pytestmark = [
    pytest.mark.interop,
    pytest.mark.skipif(KCAT is None, reason="kcat is not installed (scripts/system-deps.sh)"),
]
CLIENT = "kcat"
HEADERS = (("client", b"kcat"), ("suite", b"interop"))
TIMEOUT_S = 60


async def _kcat(*args: str, stdin: bytes | None = None) -> bytes:
    assert KCAT is not None
    process = await asyncio.create_subprocess_exec(
        KCAT,
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
    lines = b"".join(record_key(i) + b"\t" + record_value(i) + b"\n" for i in range(count))
    header_args = [arg for name, value in HEADERS for arg in ("-H", f"{name}={value.decode()}")]
    await _kcat(
        "-P",
        "-b",
        bootstrap,
        "-t",
        topic,
        "-K",
        "\t",
        "-X",
        f"compression.codec={codec}",
        "-X",
        "acks=all",
        *header_args,
        stdin=lines,
    )


async def _consume(bootstrap: str, topic: str, group: str, limit: int) -> list[Consumed]:
    """A balanced consumer that exits after ``limit`` records; closing commits exactly the
    offsets of the records it printed (librdkafka's auto offset store)."""
    output = await _kcat(
        "-b",
        bootstrap,
        "-G",
        group,
        "-X",
        "auto.offset.reset=earliest",
        "-c",
        str(limit),
        "-J",
        "-q",
        topic,
    )
    records = []
    for line in output.splitlines():
        message = json.loads(line)
        pairs = message.get("headers") or []
        headers = tuple((pairs[i], pairs[i + 1].encode()) for i in range(0, len(pairs), 2))
        records.append(
            Consumed(
                message["partition"],
                message["offset"],
                message["key"].encode(),
                message["payload"].encode(),
                headers,
            )
        )
    return records


@pytest.mark.parametrize("count", counts())
@pytest.mark.parametrize("codec", CODECS)
async def test_produce_consume_resume(
    cluster: Any, topic_names: str, codec: str, count: int
) -> None:
    topic = group = topic_names
    await create_topic(cluster.bootstrap, topic)
    await _produce(cluster.bootstrap, topic, codec, count)
    first = await _consume(cluster.bootstrap, topic, group, first_run_size(count))
    assert await group_offsets(cluster.bootstrap, group, topic) == committed_after(first)
    second = await _consume(cluster.bootstrap, topic, group, count - len(first))
    assert_delivered(count, CLIENT, first, second, headers=lambda index: HEADERS)
    assert await group_offsets(cluster.bootstrap, group, topic) == committed_after(first + second)
