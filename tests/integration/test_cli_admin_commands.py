"""configs, acls and dump-log against real brokers and real segment files."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from mirrorsim.broker.log import AppendOrigin, LogConfig, PartitionLog
from mirrorsim.cli.main import cli
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.protocol.messages.mirror_state_records import (
    MirrorPartitionStateKey,
    MirrorPartitionStateValue,
    encode_mirror_state_key,
    encode_mirror_state_value,
)
from mirrorsim.protocol.records import ControlRecordType, Record, build_batch, build_control_batch

MIRROR_ADMIN_LINES = [
    "Adding ACLs for resource `ResourcePattern(resourceType=CLUSTER_MIRROR, name=my-mirror, "
    "patternType=LITERAL)`:",
    *(
        f"(principal=User:mirror-admin, host=*, operation={op}, permissionType=ALLOW)"
        for op in ("CREATE", "ALTER", "DESCRIBE", "DELETE", "ALTER_CONFIGS", "DESCRIBE_CONFIGS")
    ),
]


async def invoke(*args: str) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, cli, list(args))


async def test_acls_cluster_mirror_examples_of_the_spec(start_cluster: Callable[..., Any]) -> None:
    bootstrap = (await start_cluster()).bootstrap
    operations = ["Create", "Alter", "Describe", "Delete", "AlterConfigs", "DescribeConfigs"]
    result = await invoke(
        "acls",
        "--bootstrap-server",
        bootstrap,
        "--add",
        "--cluster-mirror",
        "my-mirror",
        *(arg for op in operations for arg in ("--operation", op)),
        "--allow-principal",
        "User:mirror-admin",
    )
    assert (result.exit_code, result.output.splitlines()) == (0, MIRROR_ADMIN_LINES)
    result = await invoke(
        "acls",
        "--bootstrap-server",
        bootstrap,
        "--add",
        "--cluster-mirror",
        "*",
        "--operation",
        "Describe",
        "--operation",
        "DescribeConfigs",
        "--allow-principal",
        "User:monitor",
    )
    assert result.output.splitlines() == [
        "Adding ACLs for resource `ResourcePattern(resourceType=CLUSTER_MIRROR, name=*, "
        "patternType=LITERAL)`:",
        "(principal=User:monitor, host=*, operation=DESCRIBE, permissionType=ALLOW)",
        "(principal=User:monitor, host=*, operation=DESCRIBE_CONFIGS, permissionType=ALLOW)",
    ]
    result = await invoke(
        "acls", "--bootstrap-server", bootstrap, "--list", "--cluster-mirror", "my-mirror"
    )
    listed = result.output.splitlines()
    assert listed[0] == MIRROR_ADMIN_LINES[0].replace("Adding ACLs", "Current ACLs")
    assert sorted(listed[1:]) == sorted(MIRROR_ADMIN_LINES[1:])
    result = await invoke(
        "acls",
        "--bootstrap-server",
        bootstrap,
        "--remove",
        "--cluster-mirror",
        "my-mirror",
        "--operation",
        "Delete",
        "--allow-principal",
        "User:mirror-admin",
    )
    assert result.output.splitlines()[1:] == [
        "(principal=User:mirror-admin, host=*, operation=DELETE, permissionType=ALLOW)"
    ]
    result = await invoke(
        "acls", "--bootstrap-server", bootstrap, "--list", "--cluster-mirror", "my-mirror"
    )
    assert len(result.output.splitlines()) == 6


async def test_configs_alter_and_describe(start_cluster: Callable[..., Any]) -> None:
    bootstrap = (await start_cluster()).bootstrap
    async with Admin(bootstrap=bootstrap) as admin:
        (await admin.create_topics([NewTopic("my-topic", 1, 1)])).all()
    result = await invoke(
        "configs",
        "--bootstrap-server",
        bootstrap,
        "--entity-type",
        "topics",
        "--entity-name",
        "my-topic",
        "--alter",
        "--add-config",
        "retention.ms=1000,segment.ms=5000",
    )
    assert (result.exit_code, result.output) == (
        0,
        "Completed updating config for topic my-topic.\n",
    )
    result = await invoke(
        "configs",
        "--bootstrap-server",
        bootstrap,
        "--entity-type",
        "topics",
        "--entity-name",
        "my-topic",
        "--alter",
        "--delete-config",
        "segment.ms",
    )
    assert result.exit_code == 0
    result = await invoke(
        "configs",
        "--bootstrap-server",
        bootstrap,
        "--entity-type",
        "topics",
        "--entity-name",
        "my-topic",
        "--describe",
    )
    assert result.output == (
        "Dynamic configs for topic my-topic are:\n  retention.ms=1000 sensitive=false\n"
    )
    result = await invoke(
        "configs",
        "--bootstrap-server",
        bootstrap,
        "--entity-type",
        "brokers",
        "--entity-name",
        "1",
        "--alter",
        "--add-config",
        "no.such.config=1",
    )
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: INVALID_CONFIG: ")
    result = await invoke(
        "configs",
        "--bootstrap-server",
        bootstrap,
        "--entity-type",
        "topics",
        "--entity-name",
        "missing",
        "--describe",
    )
    assert (result.exit_code, result.stderr) == (
        1,
        "Error: UNKNOWN_TOPIC_OR_PARTITION: This server does not host this topic-partition\n",
    )


async def test_dump_log_of_a_segment_written_by_the_partition_log(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "__mirror_state-0", LogConfig(index_interval_bytes=1))
    key = encode_mirror_state_key(MirrorPartitionStateKey(mirror_name="my-mirror"))
    value = encode_mirror_state_value(
        MirrorPartitionStateValue(topic_name="my-topic", partition=0, state=1)
    )
    try:
        log.append_as_leader([build_batch([Record(0, 1000, key, value)])], 0, now_ms=1000)
        log.append_as_leader(
            [
                build_control_batch(
                    ControlRecordType.MIRROR_PID_RESET,
                    producer_id=-1,
                    producer_epoch=-1,
                    timestamp=1001,
                    source_cluster_id="src-cluster",
                )
            ],
            0,
            now_ms=1001,
            origin=AppendOrigin.COORDINATOR,
        )
        log.flush()
    finally:
        log.close()
    segment = tmp_path / "__mirror_state-0" / "00000000000000000000.log"
    result = await invoke(
        "dump-log",
        "--mirror-state-decoder",
        "--files",
        str(segment),
        "--files",
        str(segment.with_suffix(".index")),
    )
    lines = result.output.splitlines()
    assert result.exit_code == 0
    assert lines[:2] == [f"Dumping {segment}", "Log starting offset: 0"]
    assert lines[2].startswith("baseOffset: 0 lastOffset: 0 count: 1 ")
    assert "partitionLeaderEpoch: 0 isTransactional: false isControl: false" in lines[2]
    assert lines[3] == (
        "| offset: 0 CreateTime: 1000 keySize: 13 valueSize: 17 sequence: -1 headerKeys: [] "
        'key: {"type":"2","data":{"mirrorName":"my-mirror"}} '
        'payload: {"version":"0","data":{"topicName":"my-topic","partition":0,"state":1}}'
    )
    assert lines[4].startswith("baseOffset: 1 lastOffset: 1 count: 1 ")
    assert "isControl: true" in lines[4] and lines[4].endswith("isvalid: true")
    assert lines[5].endswith("controlType: MIRROR_PID_RESET(7) sourceClusterId: src-cluster")
    assert lines[6] == f"Dumping {segment.with_suffix('.index')}"
    assert lines[7:] == ["offset: 1 position: 98"]
