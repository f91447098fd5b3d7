"""A cluster whose brokers are OS processes (``mirrorsim.broker.process``), supervised.

``ProcessCluster`` starts broker 1 first (it creates the cluster id), then the others in
parallel, and waits for each ready line. A broker keeps its port across restarts (the
first start on port 0 takes a free one), so a bootstrap list stays valid. ``kill`` sends
a signal (SIGKILL by default) and waits for the exit; ``restart`` starts the broker again
on the same data directory. With ``restart_on_crash`` a broker that exits on its own is
started again after ``restart_backoff_s``. ``stop`` sends SIGTERM to all (clean shutdown)
and SIGKILLs whatever has not exited after ``stop_timeout_s``. Each broker's stderr goes
to ``<data_dir>/broker-<id>.log``. Each broker reads a pipe from the supervisor as its
stdin and stops cleanly when it closes, so brokers never outlive the supervising process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO

from mirrorsim.broker.cluster import ClusterSpec
from mirrorsim.broker.config import stringify
from mirrorsim.broker.ports import restartable_port
from mirrorsim.client.connection import BrokerConnection
from mirrorsim.client.errors import KafkaConnectionError, RequestTimedOut
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.errors import KafkaError

log = logging.getLogger(__name__)

READY_TIMEOUT_S = 60.0
VIEW_POLL_S = 0.05
PROBE_TIMEOUT_MS = 5000
DESCRIBE_CLUSTER_KEY = 60


class BrokerStartError(RuntimeError):
    """A broker process exited or stayed silent before printing its ready line."""


@dataclass(eq=False)
class BrokerProcess:
    broker_id: int
    port: int
    process: asyncio.subprocess.Process | None = None
    expected_exit: bool = False
    log_file: IO[bytes] | None = None
    _drain: asyncio.Task[None] | None = field(default=None, repr=False)
    _monitor: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None


class ProcessCluster:
    def __init__(
        self,
        spec: ClusterSpec,
        *,
        restart_on_crash: bool = False,
        restart_backoff_s: float = 1.0,
        stop_timeout_s: float = 30.0,
    ) -> None:
        self.spec = spec
        self.restart_on_crash = restart_on_crash
        self.restart_backoff_s = restart_backoff_s
        self.stop_timeout_s = stop_timeout_s
        self.brokers: dict[int, BrokerProcess] = {}
        self._stopping = False

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{self.spec.host}:{b.port}" for b in self.brokers.values())

    def data_dir(self, broker_id: int) -> str:
        return str(self.spec.data_dir / f"broker-{broker_id}")

    async def start(self) -> None:
        self.spec.data_dir.mkdir(parents=True, exist_ok=True)
        try:
            first, *others = self.spec.broker_ids
            await self._launch(BrokerProcess(first, self._port(first)))
            await asyncio.gather(*(self._launch(BrokerProcess(i, self._port(i))) for i in others))
            await self._await_full_view()
        except BaseException:
            await self.stop()
            raise

    async def _await_full_view(self) -> None:
        """A ready line says a broker serves; a broker learns of the ones that registered
        after it only at its next metadata refresh. The cluster counts as started once
        every broker's DescribeCluster lists them all, so a request to any broker right
        after ``start`` (a replica assignment naming any of them) sees the whole cluster."""
        expected = set(self.brokers)
        async with asyncio.timeout(READY_TIMEOUT_S):
            for broker in self.brokers.values():
                try:
                    while await _described_broker_ids(self.spec.host, broker.port) < expected:
                        await asyncio.sleep(VIEW_POLL_S)
                except (KafkaConnectionError, KafkaError, RequestTimedOut) as exc:
                    log.info(
                        "cluster %s: not waiting for a full view (a plain connection to "
                        "broker %d failed: %s)",
                        self.name,
                        broker.broker_id,
                        exc,
                    )
                    return

    def _port(self, broker_id: int) -> int:
        """The configured port, or (port 0) one that stays free while the broker restarts."""
        return self.spec.broker_port(broker_id) or restartable_port(self.spec.host)

    async def kill(self, broker_id: int, sig: int = signal.SIGKILL) -> int:
        """Signal one broker and wait for it to exit; its exit code."""
        broker = self.brokers[broker_id]
        broker.expected_exit = True
        assert broker.process is not None
        if broker.running:
            broker.process.send_signal(sig)
        code = await broker.process.wait()
        await self._forget_pipes(broker)
        return code

    async def restart(self, broker_id: int) -> None:
        broker = self.brokers[broker_id]
        if broker.running:
            await self.kill(broker_id, signal.SIGTERM)
        await self._launch(BrokerProcess(broker_id, broker.port))

    async def stop(self) -> None:
        """SIGTERM every broker (clean shutdown), SIGKILL the ones that hang."""
        self._stopping = True
        running = [b for b in self.brokers.values() if b.running]
        for broker in running:
            broker.expected_exit = True
            assert broker.process is not None
            broker.process.send_signal(signal.SIGTERM)
        for broker in running:
            assert broker.process is not None
            try:
                await asyncio.wait_for(broker.process.wait(), self.stop_timeout_s)
            except TimeoutError:
                log.warning("cluster %s: broker %d ignored SIGTERM", self.name, broker.broker_id)
                broker.process.kill()
                await broker.process.wait()
        for broker in self.brokers.values():
            if broker._monitor is not None:
                broker._monitor.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await broker._monitor
            await self._forget_pipes(broker)

    # -- internals --------------------------------------------------------------------

    async def _launch(self, broker: BrokerProcess) -> None:
        configs = {k: stringify(v) for k, v in self.spec.broker_configs(broker.broker_id).items()}
        command = [
            sys.executable,
            "-m",
            "mirrorsim.broker.process",
            "--broker-id",
            str(broker.broker_id),
            "--host",
            self.spec.host,
            "--port",
            str(broker.port),
            "--data-dir",
            self.data_dir(broker.broker_id),
            "--metadata-url",
            self.spec.effective_metadata_url,
            "--configs",
            json.dumps(configs),
            "--stop-on-stdin-eof",
        ]
        if self.spec.cluster_id:
            command += ["--cluster-id", self.spec.cluster_id]
        broker.log_file = open(  # noqa: SIM115 (closed in _forget_pipes)
            self.spec.data_dir / f"broker-{broker.broker_id}.log", "ab"
        )
        broker.process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=broker.log_file,
        )
        self.brokers[broker.broker_id] = broker
        broker.port = await self._await_ready(broker)
        broker._drain = asyncio.create_task(self._drain_stdout(broker))
        broker._monitor = asyncio.create_task(self._watch(broker))

    async def _await_ready(self, broker: BrokerProcess) -> int:
        assert broker.process is not None and broker.process.stdout is not None
        try:
            async with asyncio.timeout(READY_TIMEOUT_S):
                while line := await broker.process.stdout.readline():
                    text = line.decode().strip()
                    if text.startswith(f"broker {broker.broker_id} ready bootstrap="):
                        return int(text.rsplit(":", 1)[1])
        except TimeoutError:
            broker.process.kill()
            outcome = f"not ready within {READY_TIMEOUT_S:.0f} s"
        else:
            outcome = "exited"
        code = await broker.process.wait()
        log_path = self.spec.data_dir / f"broker-{broker.broker_id}.log"
        raise BrokerStartError(
            f"cluster {self.name}: broker {broker.broker_id} did not start ({outcome}, exit "
            f"code {code}); the end of {log_path}:\n{_tail(log_path)}"
        )

    async def _drain_stdout(self, broker: BrokerProcess) -> None:
        assert broker.process is not None and broker.process.stdout is not None
        while await broker.process.stdout.readline():
            pass

    async def _watch(self, broker: BrokerProcess) -> None:
        assert broker.process is not None
        code = await broker.process.wait()
        if broker.expected_exit or self._stopping:
            return
        log.warning("cluster %s: broker %d exited with %d", self.name, broker.broker_id, code)
        if self.restart_on_crash:
            await self._forget_pipes(broker)
            await asyncio.sleep(self.restart_backoff_s)
            if not self._stopping:
                await self._launch(BrokerProcess(broker.broker_id, broker.port))

    async def _forget_pipes(self, broker: BrokerProcess) -> None:
        if broker._drain is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await broker._drain
            broker._drain = None
        if broker.process is not None and broker.process.stdin is not None:
            broker.process.stdin.close()
        if broker.log_file is not None:
            broker.log_file.close()
            broker.log_file = None

    async def __aenter__(self) -> ProcessCluster:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()


def _tail(path: Path, lines: int = 20) -> str:
    """The last lines of a broker's log, for an error that would otherwise outlive it."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as exc:
        return f"(unreadable: {exc})"


async def _described_broker_ids(host: str, port: int) -> set[int]:
    """The live brokers one broker's own metadata lists, asked over the wire."""
    connection = BrokerConnection(
        host, port, client_id="mirrorsim-supervisor", request_timeout_ms=PROBE_TIMEOUT_MS
    )
    await connection.connect()
    try:
        response = await connection.send(
            build_request(
                DESCRIBE_CLUSTER_KEY,
                0,
                {"include_cluster_authorized_operations": False},
            )
        )
    finally:
        await connection.close()
    return {int(b.broker_id) for b in response.brokers}
