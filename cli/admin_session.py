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

from mirrorsim.broker.properties_file import load_properties
from mirrorsim.cli.errors import abort
from mirrorsim.cli.output import describe_error
from mirrorsim.client.errors import KafkaConnectionError, RequestTimedOut
from mirrorsim.protocol.errors import KafkaError

T = TypeVar("T")
CLIENT_ID = "mirrorsim-cli"


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


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    with kafka_errors():
        return asyncio.run(coroutine)
