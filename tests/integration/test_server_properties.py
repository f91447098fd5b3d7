"""Kafka's own ``server.properties`` runs a mirrorsim cluster.

The two files below are the settings of Kafka's quickstart files (comments left out):
``config/kraft/server.properties`` of Kafka 3.x and ``config/server.properties`` of Kafka
4.x. Only the ports and the log directory are replaced, so tests can run side by side.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from mirrorsim.broker.cluster import (
    ClusterRunner,
    cluster_spec_from_properties,
    parse_cluster_specs,
)
from mirrorsim.broker.config import ConfigError
from mirrorsim.broker.properties_file import parse_properties
from mirrorsim.broker.server_properties import broker_settings
from mirrorsim.cli.cmd_up import up

KAFKA_3_KRAFT_SERVER_PROPERTIES = """\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@localhost:{controller_port}
listeners=PLAINTEXT://:{port},CONTROLLER://:{controller_port}
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:{port}
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs={log_dirs}
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
"""

KAFKA_4_SERVER_PROPERTIES = """\
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=localhost:{controller_port}
listeners=PLAINTEXT://:{port},CONTROLLER://:{controller_port}
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:{port},CONTROLLER://localhost:{controller_port}
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs={log_dirs}
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
"""

IGNORED_IN_KAFKA_3_FILE = (
    "controller.listener.names, controller.quorum.voters, num.io.threads, num.network.threads, "
    "num.recovery.threads.per.data.dir, process.roles, socket.receive.buffer.bytes, "
    "socket.send.buffer.bytes, transaction.state.log.min.isr, "
    "transaction.state.log.replication.factor"
)
TIMEOUT_S = 30.0


def _write(tmp_path: Path, template: str, port: int, controller_port: int, **extra: str) -> Path:
    text = template.format(
        port=port, controller_port=controller_port, log_dirs=tmp_path / "kafka-logs"
    )
    for name, value in extra.items():
        text = (
            "\n".join(line for line in text.splitlines() if not line.startswith(f"{name}="))
            + f"\n{name}={value}\n"
        )
    path = tmp_path / "server.properties"
    path.write_text(text)
    return path


def test_stock_settings_split_into_applied_ignored_and_converted(tmp_path: Path) -> None:
    raw = parse_properties(
        KAFKA_3_KRAFT_SERVER_PROPERTIES.format(port=9092, controller_port=9093, log_dirs="/d")
    )
    settings = broker_settings(raw)
    assert settings.first_broker_id == 1
    assert settings.data_dir == Path("/d")
    assert settings.configs["listeners"] == "PLAINTEXT://:9092"
    assert settings.configs["advertised.listeners"] == "PLAINTEXT://localhost:9092"
    assert settings.configs["log.retention.ms"] == str(168 * 3_600_000)
    assert settings.configs["num.partitions"] == "1"
    assert "log.retention.hours" not in settings.configs
    assert ", ".join(settings.ignored) == IGNORED_IN_KAFKA_3_FILE
    assert settings.unknown == ()
    assert settings.report() == [
        f"ignoring Kafka broker configs that have no effect in mirrorsim: {IGNORED_IN_KAFKA_3_FILE}"
    ]


def test_finer_duration_wins_and_unknown_names_only_warn() -> None:
    settings = broker_settings(
        {"log.retention.hours": "1", "log.retention.minutes": "5", "no.such.config": "x"}
    )
    assert settings.configs == {"log.retention.ms": "300000"}
    assert settings.report() == ["ignoring unknown broker configs: no.such.config"]


@pytest.mark.parametrize(
    "configs, message",
    [
        ({"node.id": "1", "broker.id": "2"}, "must be equal"),
        ({"node.id": "-1"}, "at least 0"),
        ({"num.partitions": "many"}, "num.partitions"),
        ({"log.retention.hours": "a week"}, "log.retention.hours"),
    ],
)
def test_bad_values_of_applied_configs_are_refused(configs: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        broker_settings(configs)


@pytest.fixture
async def kafka_file_cluster(
    tmp_path: Path, free_port: Callable[[], int]
) -> AsyncIterator[Callable[..., Any]]:
    runners: list[ClusterRunner] = []

    async def start(template: str, brokers: int = 1, **extra: str) -> ClusterRunner:
        path = _write(tmp_path, template, _free_ports_in_a_row(brokers), free_port(), **extra)
        spec = cluster_spec_from_properties("kafka", path)
        spec = type(spec)(**{**_fields(spec), "brokers": brokers})
        runner = ClusterRunner(spec)
        await runner.start()
        runners.append(runner)
        return runner

    yield start
    for runner in runners:
        await runner.stop()


def _free_ports_in_a_row(count: int) -> int:
    """A port with the ``count - 1`` ports after it free too (broker k listens on port + k)."""
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            first = int(probe.getsockname()[1])
        if first + count <= 65536 and all(_free(first + i) for i in range(1, count)):
            return first


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _fields(spec: Any) -> dict[str, Any]:
    return {name: getattr(spec, name) for name in spec.__dataclass_fields__}


def _produce_and_consume(bootstrap: str, topic: str, replication: int) -> list[bytes]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 2, replication)]).values():
        future.result(timeout=TIMEOUT_S)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(10):
        producer.produce(topic, f"v{i}".encode(), key=f"k{i}".encode())
    assert producer.flush(TIMEOUT_S) == 0
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        while len(values) < 10:
            messages = consumer.consume(10, timeout=TIMEOUT_S)
            assert messages, "no records within the receive timeout"
            values += [m.value() for m in messages if m.error() is None]
    finally:
        consumer.close()
    return sorted(values)


@pytest.mark.parametrize(
    "template", [KAFKA_3_KRAFT_SERVER_PROPERTIES, KAFKA_4_SERVER_PROPERTIES], ids=["3.x", "4.x"]
)
async def test_a_cluster_runs_from_kafkas_stock_file(
    kafka_file_cluster: Any, tmp_path: Path, template: str
) -> None:
    cluster = await kafka_file_cluster(template)
    broker = cluster.brokers[0]
    assert broker.broker_id == 1
    assert broker.data_dir == tmp_path / "kafka-logs" / "broker-1"
    assert broker.config("log.retention.ms") == 168 * 3_600_000
    assert set(broker.server.endpoints()) == {"PLAINTEXT"}
    assert broker.server.registered_endpoint() == ("localhost", broker.port)
    values = await asyncio.to_thread(_produce_and_consume, cluster.bootstrap, "stock", 1)
    assert values == sorted(f"v{i}".encode() for i in range(10))


async def test_node_id_zero_starts_a_cluster_clients_can_use(kafka_file_cluster: Any) -> None:
    """Kafka's default id 0: two brokers 0 and 1, a topic replicated on both."""
    cluster = await kafka_file_cluster(
        KAFKA_3_KRAFT_SERVER_PROPERTIES, brokers=2, **{"node.id": "0"}
    )
    assert [b.broker_id for b in cluster.brokers] == [0, 1]
    first, second = cluster.brokers
    assert second.port == first.port + 1
    assert second.server.registered_endpoint() == ("localhost", first.port + 1)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    metadata = await asyncio.to_thread(admin.list_topics, timeout=TIMEOUT_S)
    assert sorted(metadata.brokers) == [0, 1]
    values = await asyncio.to_thread(_produce_and_consume, cluster.bootstrap, "zero", 2)
    assert values == sorted(f"v{i}".encode() for i in range(10))


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def test_up_takes_a_server_properties_and_names_the_ignored_configs(
    tmp_path: Path, free_port: Callable[[], int]
) -> None:
    port = free_port()
    path = _write(tmp_path, KAFKA_3_KRAFT_SERVER_PROPERTIES, port, free_port())

    def terminate_when_listening() -> None:
        deadline = time.monotonic() + TIMEOUT_S
        while not _accepts(port) and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGTERM)

    watcher = threading.Thread(target=terminate_when_listening, daemon=True)
    watcher.start()
    result = CliRunner().invoke(up, ["--server-properties", str(path), "--log-level", "ERROR"])
    watcher.join()
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        "warning: cluster server: ignoring Kafka broker configs that have no effect in "
        f"mirrorsim: {IGNORED_IN_KAFKA_3_FILE}"
    ]
    assert result.stdout.splitlines() == [
        f"cluster server ready bootstrap=127.0.0.1:{port}",
        "all clusters stopped",
    ]
    assert (tmp_path / "kafka-logs" / "broker-1").is_dir()


def test_up_refuses_a_bad_value_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("node.id=1\nnum.partitions=many\n")
    result = CliRunner().invoke(up, ["--server-properties", str(path)])
    assert result.exit_code == 1
    assert "num.partitions" in result.output
    assert "Traceback" not in result.output


def test_toml_config_table_accepts_kafka_names_and_reads_a_server_properties(
    tmp_path: Path,
) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "server.properties").write_text("node.id=0\nnum.partitions=3\n")
    specs = parse_cluster_specs(
        """
[cluster.primary]
server_properties = "conf/server.properties"

[cluster.primary.config]
"transaction.state.log.replication.factor" = 1
"num.partitions" = 4
"my.own.setting" = "x"
""",
        base_dir=tmp_path,
    )
    (spec,) = specs
    assert spec.first_broker_id == 0
    assert spec.configs == {"num.partitions": "4"}
    assert spec.report() == [
        "cluster primary: ignoring Kafka broker configs that have no effect in mirrorsim: "
        "transaction.state.log.replication.factor",
        "cluster primary: ignoring unknown broker configs: my.own.setting",
    ]
