"""Kafka's checkpoint text files: a version line, a count line, then one entry per line.

Written to a temporary file, fsynced and renamed over the old one, so a crash leaves
either the old or the new checkpoint and never a half-written one.
"""

from __future__ import annotations

import os
from pathlib import Path

CHECKPOINT_VERSION = 0


class CheckpointFormatError(ValueError):
    pass


def write_checkpoint(
    path: Path, entries: list[tuple[int, ...]], *, tmp_suffix: str = ".tmp"
) -> None:
    """``tmp_suffix`` (ending in ``.tmp``) lets a writer on another thread stay off the
    temporary file of the usual writer."""
    lines = [str(CHECKPOINT_VERSION), str(len(entries))]
    lines.extend(" ".join(str(v) for v in entry) for entry in entries)
    tmp = path.with_name(path.name + tmp_suffix)
    with open(tmp, "wb") as f:
        f.write(("\n".join(lines) + "\n").encode())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_checkpoint(path: Path, width: int) -> list[tuple[int, ...]] | None:
    """Entries of ``width`` integers each, or None when the file does not exist."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    lines = text.splitlines()
    try:
        if len(lines) < 2 or int(lines[0]) != CHECKPOINT_VERSION:
            raise CheckpointFormatError(f"{path}: bad header")
        count = int(lines[1])
        entries = [tuple(int(v) for v in line.split()) for line in lines[2 : 2 + count]]
    except ValueError as exc:
        raise CheckpointFormatError(f"{path}: {exc}") from exc
    if len(entries) != count or any(len(e) != width for e in entries):
        raise CheckpointFormatError(f"{path}: expected {count} entries of {width} fields")
    return entries
