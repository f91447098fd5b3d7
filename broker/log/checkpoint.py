"""Kafka's checkpoint text files: a version line, a count line, then one entry per line.

Written to a temporary file and renamed over the old one, so a reader never sees a
half-written checkpoint. With ``sync`` (the default) the temporary file is fsynced
before the rename, so a machine crash also leaves either the old or the new checkpoint;
without it, a crash of the machine (not just the process) may leave a torn or empty file,
which only a checkpoint that recovery can rebuild from the log may accept.
"""

from __future__ import annotations

import os
from pathlib import Path

from mirrorsim.broker.log.shutdown_sync import DeferredRenames

CHECKPOINT_VERSION = 0


class CheckpointFormatError(ValueError):
    pass


def write_checkpoint(
    path: Path,
    entries: list[tuple[int, ...]],
    *,
    sync: bool = True,
    deferred: DeferredRenames | None = None,
) -> None:
    lines = [str(CHECKPOINT_VERSION), str(len(entries))]
    lines.extend(" ".join(str(v) for v in entry) for entry in entries)
    replace_file(path, ("\n".join(lines) + "\n").encode(), sync=sync, deferred=deferred)


def replace_file(
    path: Path, data: bytes, *, sync: bool = True, deferred: DeferredRenames | None = None
) -> None:
    """Write ``data`` to a temporary file beside ``path`` and rename it over ``path``,
    fsynced first with ``sync``. With ``deferred`` (a clean shutdown) the temporary file
    is left for ``ShutdownSync`` to sync and rename together with every other log's."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        if sync and deferred is None:
            f.flush()
            os.fsync(f.fileno())
    if deferred is not None:
        deferred.replace(tmp, path)
        return
    os.replace(tmp, path)


def read_checkpoint(path: Path, width: int, *, whole: bool = False) -> list[tuple[int, ...]] | None:
    """Entries of ``width`` integers each, or None when the file does not exist.

    ``whole`` also requires the count line to match the lines that follow and the last
    one to end in a newline, as written: a write cut short at any byte fails one of them.
    """
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise CheckpointFormatError(f"{path}: {exc}") from exc
    lines = text.splitlines()
    try:
        if len(lines) < 2 or int(lines[0]) != CHECKPOINT_VERSION:
            raise CheckpointFormatError(f"{path}: bad header")
        count = int(lines[1])
        entries = [tuple(int(v) for v in line.split()) for line in lines[2 : 2 + count]]
    except ValueError as exc:
        raise CheckpointFormatError(f"{path}: {exc}") from exc
    if whole and (len(lines) != 2 + count or not text.endswith("\n")):
        raise CheckpointFormatError(f"{path}: not the {count} entries it announces")
    if len(entries) != count or any(len(e) != width for e in entries):
        raise CheckpointFormatError(f"{path}: expected {count} entries of {width} fields")
    return entries
