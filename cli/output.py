"""How the commands print: Kafka-style lists and aligned tables, JSON, and error lines."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import click
from rich.console import Console

from mirrorsim.protocol.errors import KafkaError

PIPED_WIDTH = 200
"""Rich's width for piped or captured output: wide enough that no table column is cut."""


def wide_console() -> Console:
    """A console for stdout: the terminal's width on a terminal (tables fold their cells to
    fit), ``PIPED_WIDTH`` otherwise instead of rich's 80 columns."""
    console = Console()
    if not console.is_terminal:
        console.width = PIPED_WIDTH
    return console


def kafka_list(items: Iterable[object]) -> str:
    """Java's ``List.toString``: ``[a, b]``, the form Kafka's tools print topic lists in."""
    return "[" + ", ".join(str(item) for item in items) + "]"


def table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """Columns left-aligned to their widest cell, one space apart, no trailing blanks."""
    cells = [list(header), *([str(value) for value in row] for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "\n".join(
        " ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in cells
    )


def echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, sort_keys=False))


def describe_error(error: KafkaError) -> str:
    """``CODE_NAME: message`` with the message as Kafka's error table words it (no period)."""
    return f"{error.code.name}: {error.message.rstrip('.')}"
