"""One broker as its own OS process: ``python -m mirrorsim.broker.process ...``.

The process starts the broker, prints one ready line on stdout
(``broker 2 ready bootstrap=127.0.0.1:9093``) and serves until SIGTERM or SIGINT, then
shuts down cleanly (controlled shutdown included) and exits 0. A failed start, or a
shutdown the file system cut short, exits 1 with the reason in one line on stderr. Logs
go to stderr. Brokers of one cluster share only the metadata database named by
``--metadata-url``. With ``--stop-on-stdin-eof`` the broker also shuts down cleanly when
its standard input reaches end of file: a supervisor hands each broker a pipe, so brokers
stop with their supervisor however it ends (even SIGKILL) instead of serving on as orphans.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from mirrorsim.broker.log_format import LOG_LEVELS, configure_logging
from mirrorsim.broker.server import Broker

READY_PREFIX = "broker"


class BrokerStopError(Exception):
    """The broker served, then could not close everything: said apart from a failed start."""


def ready_line(broker_id: int, bootstrap: str) -> str:
    return f"{READY_PREFIX} {broker_id} ready bootstrap={bootstrap}"


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m mirrorsim.broker.process")
    parser.add_argument("--broker-id", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--metadata-url", required=True)
    parser.add_argument("--cluster-id", default=None)
    parser.add_argument("--configs", default="{}", help="static broker configs as a JSON object")
    parser.add_argument("--log-level", default="INFO", choices=LOG_LEVELS)
    parser.add_argument(
        "--stop-on-stdin-eof",
        action="store_true",
        help="shut down cleanly when standard input closes (the supervisor has gone)",
    )
    return parser.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    configs: dict[str, Any] = json.loads(args.configs)
    broker = Broker(
        broker_id=args.broker_id,
        host=args.host,
        port=args.port,
        data_dir=args.data_dir,
        metadata_url=args.metadata_url,
        cluster_id=args.cluster_id,
        configs=configs,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if args.stop_on_stdin_eof:
        watch_stdin(loop, stop)
    await broker.start()
    try:
        print(ready_line(broker.broker_id, broker.bootstrap), flush=True)
        await stop.wait()
    finally:
        try:
            await broker.stop()
        except OSError as exc:
            raise BrokerStopError(f"broker {args.broker_id} did not stop cleanly: {exc}") from exc


def watch_stdin(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """Set ``stop`` once standard input reaches end of file (its writer has exited)."""
    stdin = sys.stdin.buffer

    def readable() -> None:
        if not os.read(stdin.fileno(), 4096):
            loop.remove_reader(stdin.fileno())
            stop.set()

    loop.add_reader(stdin.fileno(), readable)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    configure_logging(args.log_level)
    try:
        asyncio.run(serve(args))
    except BrokerStopError as exc:
        print(exc, file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"broker {args.broker_id} cannot start: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
