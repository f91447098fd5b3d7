"""``partition.metadata``: the topic id a partition directory belongs to.

Kafka writes ``version: 0`` and ``topic_id: <base64 url-safe uuid without padding>`` so a
recreated topic of the same name never adopts an old directory.
"""

from __future__ import annotations

import base64
import os
import threading
import uuid
from pathlib import Path

FILE_NAME = "partition.metadata"


class InconsistentTopicIdError(ValueError):
    pass


def encode_topic_id(topic_id: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


def decode_topic_id(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def read_partition_metadata(directory: Path) -> uuid.UUID | None:
    """The stored topic id, None when there is none. An empty file counts as none: the
    file is written without fsync (``write_partition_metadata``), so a machine crash
    before the log's next flush may leave it empty, and the broker writes it again from
    the cluster metadata."""
    try:
        text = (directory / FILE_NAME).read_text()
    except FileNotFoundError:
        return None
    if not text:
        return None
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    if fields.get("version", "").strip() != "0" or "topic_id" not in fields:
        raise ValueError(f"{directory / FILE_NAME}: unsupported content")
    return decode_topic_id(fields["topic_id"].strip())


def write_partition_metadata(directory: Path, topic_id: uuid.UUID) -> None:
    """Write the file without fsync, as Kafka does (it flushes it later, off the path
    that creates the partition): an fsync per partition was most of creating 100,000 of
    them. ``sync_partition_metadata`` makes it durable with the log's next flush."""
    path = directory / FILE_NAME
    # One temporary file per writer thread: a cancelled refresh's thread may still be
    # writing while the next refresh opens the same partition, and os.replace is atomic.
    tmp = path.with_name(f"{FILE_NAME}.{os.getpid()}-{threading.get_ident()}.tmp")
    with open(tmp, "w") as f:
        f.write(f"version: 0\ntopic_id: {encode_topic_id(topic_id)}")
    os.replace(tmp, path)


def sync_partition_metadata(directory: Path) -> None:
    """fsync the file written by ``write_partition_metadata``."""
    fd = os.open(directory / FILE_NAME, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
