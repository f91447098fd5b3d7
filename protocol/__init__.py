"""The Kafka wire protocol, sans I/O: bytes in, objects out.

``framing`` splits and (de)codes frames, ``registry`` maps (api key, version) to message
classes, ``schema_reader`` decodes tolerantly, ``errors`` holds the error codes,
``messages`` the KIP-1279 messages and ``records`` the record-batch codec. Nothing here
imports asyncio or sockets or touches files; ``tests/unit/test_sans_io.py`` enforces it.
"""
