"""``dump-log --mirror-state-decoder`` on the ``__mirror_state`` segments a real
destination broker wrote while it mirrored a topic and failed it over."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from helpers.mirrors import MIRROR, MIRROR_CONFIGS, broker_of, mirror_state, produce

from mirrorsim.broker.metadata.ids import to_base64
from mirrorsim.cli.main import cli
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.protocol.messages.mirror_state_records import MIRROR_STATE_TOPIC

RECORD = re.compile(r"^\| offset: \d+ .* key: (\{.*\}) payload: (.*)$")
PREPARING, MIRRORING, STOPPING, STOPPED = 0, 1, 4, 5


async def test_every_record_the_broker_writes_decodes(start_cluster: Any, wait_for: Any) -> None:
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic("orders", 1, 1)])).all()
    await produce(source.bootstrap, "orders", 5)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, ["orders"])).all()
        await wait_for(lambda: mirror_state(destination, "orders", 0) == "MIRRORING", timeout=20)
        (await admin.remove_topics_from_mirror(MIRROR, ["orders"])).all()
    await wait_for(lambda: mirror_state(destination, "orders", 0) == "STOPPED", timeout=20)
    broker = broker_of(destination)
    topic_id = broker.snapshot.topics["orders"].topic_id
    segments = []
    for p in range(MIRROR_CONFIGS["mirror.topic.num.partitions"]):
        state_log = broker.replica_manager.partition(MIRROR_STATE_TOPIC, p).log
        state_log.flush()
        segments += [s for s in sorted(Path(state_log.dir).glob("*.log")) if s.stat().st_size]
    argv = [
        "dump-log",
        "--mirror-state-decoder",
        *(a for s in segments for a in ("--files", str(s))),
    ]
    result = await asyncio.to_thread(CliRunner().invoke, cli, argv)
    assert result.exit_code == 0, result.output
    assert "<invalid" not in result.output

    records = [
        (json.loads(m.group(1)), m.group(2))
        for m in map(RECORD.match, result.output.splitlines())
        if m is not None
    ]
    states = [
        json.loads(payload)["data"]["state"]
        for key, payload in records
        if key
        == {
            "type": "3",
            "data": {"mirrorName": MIRROR, "topicId": to_base64(topic_id), "partition": 0},
        }
    ]
    assert states == [PREPARING, MIRRORING, STOPPING, STOPPED]
    epochs = [json.loads(p)["data"] for k, p in records if k["type"] == "1"]
    assert epochs and epochs[-1]["topics"][0]["name"] == "orders"
    assert epochs[-1]["topics"][0]["partitions"][0]["partitionIndex"] == 0
