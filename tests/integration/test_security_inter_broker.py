"""Brokers authenticate to each other on a SASL or mTLS inter-broker listener.

A 3-broker cluster whose inter-broker listener needs credentials, with the ACL authorizer
on and only the inter-broker principal (not ``User:ANONYMOUS``) in ``super.users``:
follower fetches, transaction markers and the mirror coordinators' state calls all
succeed, while the same calls from an unauthenticated PLAINTEXT connection are refused.
"""

from __future__ import annotations

import asyncio
import datetime
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from helpers.mirrors import MIRROR, produce
from helpers.tls import issue, openssl

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.client.cluster import RequestSpec
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.messages.constants import MirrorApiKey

TOPIC = "orders"
PARTITIONS = 3
RECORDS = 12
TIMEOUT_S = 30
WRITE_TXN_MARKERS = 27
FETCH = 1
INTERNAL_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="broker" password="broker-secret" '
    'user_broker="broker-secret" user_admin="admin-secret";'
)
COMMON = {
    "authorizer.class.name": "mirrorsim.AclAuthorizer",
    "default.replication.factor": 3,
    "min.insync.replicas": 3,
    "mirror.topic.num.partitions": 3,
    "mirror.fetch.max.wait.ms": 50,
    "metadata.refresh.interval.ms": 100,
    "transaction.state.log.num.partitions": 3,
}
SASL_INTER_BROKER = {
    **COMMON,
    "listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
    "listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT,EXTERNAL:PLAINTEXT",
    "inter.broker.listener.name": "INTERNAL",
    "sasl.mechanism.inter.broker.protocol": "PLAIN",
    "listener.name.internal.plain.sasl.jaas.config": INTERNAL_JAAS,
    "super.users": "User:broker;User:admin",
}
ADMIN = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "PLAIN",
    "sasl.username": "admin",
    "sasl.password": "admin-secret",
    "default.api.timeout.ms": "10000",
}
AIOKAFKA_ADMIN = {
    "security_protocol": "SASL_PLAINTEXT",
    "sasl_mechanism": "PLAIN",
    "sasl_plain_username": "admin",
    "sasl_plain_password": "admin-secret",
}


def listener_bootstrap(cluster: Any, listener: str) -> str:
    return ",".join(f"127.0.0.1:{b.server.endpoints()[listener][1]}" for b in cluster.brokers)


def replicas(cluster: Any, topic: str, partition: int) -> list[Any]:
    return [
        p
        for b in cluster.brokers
        for p in b.replica_manager.partitions()
        if p.topic == topic and p.index == partition
    ]


def leader_of(cluster: Any, topic: str, partition: int) -> Any:
    return next(p for p in replicas(cluster, topic, partition) if p.is_leader)


def fully_replicated(cluster: Any, topic: str, partition: int, end: int) -> bool:
    found = replicas(cluster, topic, partition)
    return (
        len(found) == 3
        and all(p.log_end_offset == end for p in found)
        and leader_of(cluster, topic, partition).high_watermark == end
    )


async def replicate_and_commit(
    cluster: Any, bootstrap: str, client: dict[str, Any], wait_for: Any
) -> None:
    """Records written with acks=all under min.insync.replicas=3 (so every follower must
    fetch), then a committed transaction (so the coordinator's markers must land)."""
    async with Admin(bootstrap=bootstrap, config=ADMIN) as admin:
        (await admin.create_topics([NewTopic(TOPIC, 1, 3)])).all()
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks="all", transactional_id="tx-secure", **client
    )
    await producer.start()
    try:
        async with producer.transaction():
            for i in range(RECORDS):
                await producer.send(TOPIC, f"v{i}".encode(), partition=0)
    finally:
        await producer.stop()
    end = RECORDS + 1  # the records and the COMMIT marker

    def committed() -> bool:
        leader = leader_of(cluster, TOPIC, 0)
        return fully_replicated(cluster, TOPIC, 0, end) and leader.last_stable_offset == end

    await wait_for(committed, timeout=TIMEOUT_S, message="the commit on every replica")
    assert sorted(leader_of(cluster, TOPIC, 0).state.isr) == [1, 2, 3]


@pytest.fixture
async def sasl_cluster(start_cluster: Any) -> AsyncIterator[Any]:
    yield await start_cluster("backup", brokers=3, configs=SASL_INTER_BROKER)


async def test_replication_and_transactions_over_a_sasl_inter_broker_listener(
    sasl_cluster: Any, wait_for: Any
) -> None:
    bootstrap = listener_bootstrap(sasl_cluster, "INTERNAL")
    await replicate_and_commit(sasl_cluster, bootstrap, AIOKAFKA_ADMIN, wait_for)


async def test_a_mirror_runs_on_a_destination_with_a_sasl_inter_broker_listener(
    start_cluster: Any, sasl_cluster: Any, wait_for: Any
) -> None:
    source = await start_cluster("primary", configs={"mirror.fetch.max.wait.ms": 50})
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])).all()
    await produce(source.bootstrap, TOPIC, RECORDS, partitions=PARTITIONS)
    ends = {
        p: source.brokers[0].replica_manager.partition(TOPIC, p).log_end_offset
        for p in range(PARTITIONS)
    }
    async with Admin(bootstrap=listener_bootstrap(sasl_cluster, "INTERNAL"), config=ADMIN) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()

        async def mirrored() -> bool:
            described = await admin.describe_mirrors([MIRROR])
            states = {p.partition: p.state for p in described[MIRROR].partitions}
            return states == dict.fromkeys(range(PARTITIONS), "MIRRORING") and all(
                fully_replicated(sasl_cluster, TOPIC, p, end) for p, end in ends.items()
            )

        await wait_for(mirrored, timeout=TIMEOUT_S, message="a mirrored copy on every replica")
    coordinators = {
        b.broker_id
        for b in sasl_cluster.brokers
        for p in b.replica_manager.partitions()
        if p.topic == "__mirror_state" and p.is_leader
    }
    assert len(coordinators) > 1, "no mirror state call crossed brokers"


async def test_internal_calls_from_an_anonymous_plaintext_connection_are_refused(
    sasl_cluster: Any,
) -> None:
    read_states = RequestSpec(
        MirrorApiKey.READ_MIRROR_STATES,
        {
            "mirror_name": MIRROR,
            "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0}]}],
        },
    )
    markers = RequestSpec(
        WRITE_TXN_MARKERS,
        {
            "markers": [
                {
                    "producer_id": 1,
                    "producer_epoch": 0,
                    "transaction_result": True,
                    "topics": [{"name": TOPIC, "partition_indexes": [0]}],
                    "coordinator_epoch": 0,
                }
            ]
        },
    )
    follower_fetch = RequestSpec(
        FETCH,
        {
            "replica_id": 2,
            "max_wait": datetime.timedelta(0),
            "min_bytes": 1,
            "max_bytes": 1024,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": TOPIC,
                    "partitions": [
                        {
                            "partition": 0,
                            "current_leader_epoch": -1,
                            "fetch_offset": 0,
                            "log_start_offset": 0,
                            "partition_max_bytes": 1024,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
        versions=(11,),
    )
    plaintext = listener_bootstrap(sasl_cluster, "EXTERNAL")
    async with Admin(bootstrap=plaintext, config={"default.api.timeout.ms": "5000"}) as anonymous:
        await anonymous.start()
        node = sorted(anonymous.cluster.brokers)[0]
        states = await anonymous.cluster.send_to_node(node, read_states)
        assert states.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        written = await anonymous.cluster.send_to_node(node, markers)
        marker_codes = {p.error_code for t in written.markers[0].topics for p in t.partitions}
        assert marker_codes == {ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
        fetched = await anonymous.cluster.send_to_node(node, follower_fetch)
        fetch_codes = {p.error_code for t in fetched.responses for p in t.partitions}
        assert fetch_codes == {ErrorCode.CLUSTER_AUTHORIZATION_FAILED}


@pytest.fixture(scope="module")
def broker_certificates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A CA and one certificate every broker presents, as server and as client."""
    directory = tmp_path_factory.mktemp("inter-broker-tls")
    try:
        openssl(
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=mirrorsim-test-ca",
            cwd=directory,
        )  # fmt: skip
        issue(directory, "broker", "/O=Acme/CN=broker", "subjectAltName=IP:127.0.0.1\n")
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"openssl is needed for the test CA: {exc}")
    return {
        "ca": directory / "ca.pem",
        "cert": directory / "broker.pem",
        "key": directory / "broker.key",
    }


async def test_replication_and_transactions_over_an_mtls_inter_broker_listener(
    start_cluster: Any, broker_certificates: dict[str, Path], wait_for: Any
) -> None:
    cluster = await start_cluster(
        "backup",
        brokers=3,
        configs={
            **COMMON,
            "listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
            "listener.security.protocol.map": "INTERNAL:SSL,EXTERNAL:SASL_PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
            "ssl.keystore.location": str(broker_certificates["cert"]),
            "ssl.key.location": str(broker_certificates["key"]),
            "ssl.truststore.location": str(broker_certificates["ca"]),
            "ssl.client.auth": "required",
            "sasl.users": "admin:admin-secret",
            "super.users": "User:CN=broker,O=Acme;User:admin",
        },
    )
    bootstrap = listener_bootstrap(cluster, "EXTERNAL")
    await asyncio.wait_for(
        replicate_and_commit(cluster, bootstrap, AIOKAFKA_ADMIN, wait_for), TIMEOUT_S * 2
    )
