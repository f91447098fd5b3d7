"""A tiny Kafka-speaking server for the client tests: real sockets, scripted answers.

It answers ApiVersions and Metadata itself and lets a test add handlers for other api
keys. Every request runs in its own task and its response is written when the handler
returns, so a test can make responses leave out of order. It records what it received,
so a test can check how the client encoded a request.
"""

from __future__ import annotations
