"""Running a command's cluster calls and turning their failures into one error line.

Commands describe their work as a coroutine over ``Admin`` and hand it to ``run``: Kafka
errors print as ``Error: CODE_NAME: message``, an unreachable cluster, a bad property file
or a ``CommandError`` as a plain sentence, and all of them exit with code 1.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console

from mirrorsim.broker.properties_file import load_properties
from mirrorsim.cli.errors import abort
from mirrorsim.cli.output import describe_error
from mirrorsim.client.errors import KafkaConnectionError, RequestTimedOut
from mirrorsim.protocol.errors import KafkaError

T = TypeVar("T")
CLIENT_ID = "mirrorsim-cli"
NOTICE_AFTER_S = 1.5
"""How long a command runs silently before saying what it is waiting for."""


class CommandError(Exception):
    """A user error found while the command runs (no matching topic, unknown mirror...)."""


def command_config(path: Path | None) -> dict[str, str]:
    """The Admin client properties of ``--command-config`` (empty without the option)."""
    if path is None:
        return {}
    try:
        return load_properties(path)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        abort(f"cannot read {path}: {exc}")


@contextlib.contextmanager
def kafka_errors() -> Iterator[None]:
    """Report a failed cluster call as one line on stderr and exit 1."""
    try:
        yield
    except KafkaError as exc:
        abort(describe_error(exc))
    except (KafkaConnectionError, RequestTimedOut) as exc:
        abort(str(exc) or type(exc).__name__)
    except (CommandError, ValueError) as exc:
        abort(str(exc))


def run(coroutine: Coroutine[Any, Any, T], waiting_for: str | None = None) -> T:
    """Run the command's cluster calls; past ``NOTICE_AFTER_S`` a status line on a
    terminal's stderr says what they wait for (``waiting_for``), so an unreachable cluster
    is not a silent minute. The line is transient: piped output stays clean."""
    with kafka_errors():
        if waiting_for is None:
            return asyncio.run(coroutine)
        return asyncio.run(_with_notice(coroutine, waiting_for))


async def _with_notice(coroutine: Coroutine[Any, Any, T], waiting_for: str) -> T:
    task = asyncio.ensure_future(coroutine)
    done, _ = await asyncio.wait({task}, timeout=NOTICE_AFTER_S)
    if done:
        return task.result()
    with Console(stderr=True).status(f"waiting for {waiting_for}"):
        return await task
