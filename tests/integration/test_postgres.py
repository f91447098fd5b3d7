"""The broker on PostgreSQL: a throwaway PostgreSQL server for the session, the metadata
store suite run against it, and the whole stack (cluster, topics, produce, consume, group
commits, restart) with PostgreSQL as the metadata database.

The server is a private cluster in a temporary directory, listening on a free port on
127.0.0.1 only, with trust authentication; every test gets its own fresh database. As
root, the server runs as the ``postgres`` user (PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from helpers import metadata_store_suite, share_state_store_suite
from sqlalchemy import Engine, create_engine, event, text, update

from mirrorsim.broker.cluster import ClusterRunner, ClusterSpec
from mirrorsim.broker.metadata import (
    MetadataStore,
    PartitionAssignment,
    TopicRecord,
    change_counter,
    schema,
)
from mirrorsim.client.admin import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.drills.polling import wait_until_blocking

pytestmark = pytest.mark.postgres

SEARCHED_BIN_DIRS = ("/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin")
SUPERUSER = "mirrorsim"
START_TIMEOUT_S = 60
RECEIVE_TIMEOUT_S = 30


def postgres_bin_dir() -> Path | None:
    for candidate in (os.environ.get("MIRRORSIM_POSTGRES_BIN"), *SEARCHED_BIN_DIRS):
        if candidate and (Path(candidate) / "initdb").is_file():
            return Path(candidate)
    found = shutil.which("initdb")
    return Path(found).parent if found else None


@dataclass
class PostgresServer:
    bin_dir: Path
    data_dir: Path
    port: int

    @property
    def admin_url(self) -> str:
        return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.bin_dir / tool), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=START_TIMEOUT_S)

    def start(self) -> None:
        if os.geteuid() == 0:
            postgres = pwd.getpwnam("postgres")
            os.chown(self.data_dir, postgres.pw_uid, postgres.pw_gid)
        self._run("initdb", "-D", str(self.data_dir), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8")
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.data_dir} -c fsync=off"
        log_file = str(self.data_dir / "server.log")
        self._run("pg_ctl", "-D", str(self.data_dir), "-o", options, "-l", log_file, "-w", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "stop")

    def create_database(self) -> str:
        """A fresh, empty database; returns its SQLAlchemy URL."""
        name = f"test_{uuid.uuid4().hex}"
        engine = create_engine(self.admin_url, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        engine.dispose()
        return self.admin_url.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture(scope="session")
def postgres_server(free_port: Callable[[], int]) -> Iterator[PostgresServer]:
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    data_dir = Path(tempfile.mkdtemp(prefix="mirrorsim-pg-"))
    server = PostgresServer(bin_dir, data_dir, free_port())
    try:
        server.start()
        yield server
    finally:
        if (data_dir / "postmaster.pid").exists():
            server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture
def url(postgres_server: PostgresServer) -> str:
    """The metadata store suite's database: here a fresh PostgreSQL database."""
    return postgres_server.create_database()


# The metadata store suite, collected again here against PostgreSQL.
store = metadata_store_suite.store
globals().update(
    {name: test for name, test in vars(metadata_store_suite).items() if name.startswith("test_")}
)

# The share-state store suite, likewise.
metadata = share_state_store_suite.metadata
globals().update(
    {name: test for name, test in vars(share_state_store_suite).items() if name.startswith("test_")}
)


async def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for value in values:
            await producer.send_and_wait(topic, value, key=value)
    finally:
        await producer.stop()


async def _consume_and_commit(bootstrap: str, topic: str, group: str, count: int) -> list[bytes]:
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        values = [
            (await asyncio.wait_for(consumer.getone(), RECEIVE_TIMEOUT_S)).value
            for _ in range(count)
        ]
        await consumer.commit()
    finally:
        await consumer.stop()
    return values


async def test_whole_stack_on_postgres(tmp_path: Path, url: str) -> None:
    spec = ClusterSpec(
        name="primary",
        data_dir=tmp_path / "primary",
        brokers=2,
        metadata_url=url,
        configs={"group.initial.rebalance.delay.ms": 0},
    )
    topic, group = "orders", "billing"
    first_batch = [f"order-{i}".encode() for i in range(50)]
    second_batch = [f"order-{i}".encode() for i in range(50, 80)]

    async with ClusterRunner(spec) as cluster:
        async with Admin(cluster.bootstrap) as admin:
            (await admin.create_topics([NewTopic(topic, 1, 2)])).all()
        await _produce(cluster.bootstrap, topic, first_batch)
        assert await _consume_and_commit(cluster.bootstrap, topic, group, 50) == first_batch
        cluster_id = cluster.cluster_id

    async with ClusterRunner(spec) as restarted:
        assert restarted.cluster_id == cluster_id
        async with Admin(restarted.bootstrap) as admin:
            assert topic in await admin.list_topics()
        checker = AIOKafkaConsumer(group_id=group, bootstrap_servers=restarted.bootstrap)
        await checker.start()
        try:
            assert await checker.committed(TopicPartition(topic, 0)) == 50
        finally:
            await checker.stop()
        await _produce(restarted.bootstrap, topic, second_batch)
        resumed = await _consume_and_commit(restarted.bootstrap, topic, group, 30)
        assert resumed == second_batch


def test_the_server_listens_only_on_loopback(postgres_server: PostgresServer) -> None:
    engine = create_engine(postgres_server.admin_url)
    with engine.connect() as conn:
        assert conn.execute(text("SHOW listen_addresses")).scalar() == "127.0.0.1"
        assert conn.execute(text("SHOW server_version_num")).scalar() >= "150000"
    engine.dispose()


def _writer_waits_for_the_lock(observer: Engine) -> bool:
    with observer.connect() as conn:
        waiting = conn.execute(
            text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
        ).scalar_one()
    return bool(waiting)


def test_a_transaction_sees_one_moment_of_the_store(url: str) -> None:
    """A commit cannot land between two statements of a store transaction, as on SQLite.

    A snapshot reads the partitions, then the topics and their configs. A writer changing
    both commits right between those two reads (or, with the store's lock, waits for the
    snapshot to end): the snapshot shows the write in both or in neither, never the old
    leader epochs with the new configs."""
    store, writer = MetadataStore.open(url), MetadataStore.open(url)
    store.create_topic(
        TopicRecord(
            name="orders",
            topic_id=uuid.uuid4(),
            configs={"retention.ms": "1000"},
            partitions=(PartitionAssignment(0, (1,), leader=1, leader_epoch=0, isr=(1,)),),
        )
    )
    observer = create_engine(url)

    def write_both() -> None:
        with writer.engine.begin() as conn:
            conn.execute(update(schema.partitions).values(leader_epoch=7))
            conn.execute(update(schema.topics).values(configs=json.dumps({"retention.ms": "2"})))
            change_counter.bump(conn, topics=["orders"])

    thread = threading.Thread(target=write_both)

    def between_the_reads(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if thread.ident is None and re.search(r"\bFROM topics\b", statement):
            thread.start()
            wait_until_blocking(
                lambda: not thread.is_alive() or _writer_waits_for_the_lock(observer),
                30,
                "the writer to commit or to wait for the lock",
            )

    event.listen(store.engine, "before_cursor_execute", between_the_reads)
    try:
        topic = store.snapshot().topics["orders"]
    finally:
        event.remove(store.engine, "before_cursor_execute", between_the_reads)
        thread.join(30)
    seen = (topic.partitions[0].leader_epoch, topic.configs["retention.ms"])
    assert seen in ((0, "1000"), (7, "2")), f"a snapshot mixing two moments: {seen}"
    after = store.snapshot().topics["orders"]
    assert (after.partitions[0].leader_epoch, after.configs["retention.ms"]) == (7, "2")
    for engine in (store.engine, writer.engine, observer):
        engine.dispose()
