"""The four batch codecs, framed the way Kafka's own clients and broker frame them.

- gzip: one gzip member (what ``GZIPOutputStream`` writes); several members also decode.
- snappy: Kafka's Java producer writes xerial-framed snappy (``SnappyOutputStream``:
  a 16-byte header, then ``int32 length`` + raw snappy block per 32 KiB of input), while
  librdkafka writes one raw snappy block. Kafka reads both, so decoding sniffs the xerial
  header and falls back to raw; encoding writes xerial like the Java producer.
- lz4: the LZ4 frame format with independent blocks (KIP-57); linked blocks are not
  readable by Kafka, so they are never written.
- zstd: one zstd frame; frames without a content size (streaming producers) decode too.

Levels follow Kafka's defaults (gzip 6, lz4 9, zstd 3) so batches look like a broker's.
"""

from __future__ import annotations

import struct

import cramjam

from mirrorsim.protocol.records.raw_batch import Compression, CorruptRecordError

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_BLOCK_SIZE = 32 * 1024
_BLOCK_LENGTH = struct.Struct(">i")

GZIP_LEVEL = 6
LZ4_LEVEL = 9
ZSTD_LEVEL = 3


def compress(codec: Compression, data: bytes) -> bytes:
    if codec is Compression.NONE:
        return data
    if codec is Compression.GZIP:
        return bytes(cramjam.gzip.compress(data, level=GZIP_LEVEL))
    if codec is Compression.SNAPPY:
        return _xerial_snappy_compress(data)
    if codec is Compression.LZ4:
        compressor = cramjam.lz4.Compressor(
            level=LZ4_LEVEL, content_checksum=False, block_linked=False
        )
        compressor.compress(data)
        return bytes(compressor.finish())
    if codec is Compression.ZSTD:
        return bytes(cramjam.zstd.compress(data, level=ZSTD_LEVEL))
    raise ValueError(f"unknown compression codec {codec!r}")


def decompress(codec: Compression, data: bytes | memoryview) -> bytes:
    """Inflate a records section; anything a codec rejects is a corrupt batch."""
    try:
        if codec is Compression.GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec is Compression.SNAPPY:
            return _snappy_decompress(data)
        if codec is Compression.LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec is Compression.ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except CorruptRecordError:
        raise
    except Exception as exc:
        raise CorruptRecordError(f"cannot decompress {codec.name} records: {exc}") from exc
    if codec is Compression.NONE:
        return bytes(data)
    raise CorruptRecordError(f"unknown compression codec {codec!r}")


def _xerial_snappy_compress(data: bytes) -> bytes:
    view = memoryview(data)
    parts = [XERIAL_HEADER]
    for start in range(0, len(view), XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + XERIAL_BLOCK_SIZE]))
        parts.append(_BLOCK_LENGTH.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_decompress(data: bytes | memoryview) -> bytes:
    view = memoryview(data)
    if bytes(view[: len(XERIAL_MAGIC)]) != XERIAL_MAGIC or len(view) < len(XERIAL_HEADER):
        return bytes(cramjam.snappy.decompress_raw(view))
    out = []
    pos = len(XERIAL_HEADER)
    end = len(view)
    while pos < end:
        if end - pos < _BLOCK_LENGTH.size:
            raise CorruptRecordError("truncated xerial snappy block length")
        (length,) = _BLOCK_LENGTH.unpack_from(view, pos)
        pos += _BLOCK_LENGTH.size
        if length < 0 or pos + length > end:
            raise CorruptRecordError(f"xerial snappy block of {length} bytes overruns the batch")
        out.append(bytes(cramjam.snappy.decompress_raw(view[pos : pos + length])))
        pos += length
    return b"".join(out)
