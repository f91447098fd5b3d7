"""AddTopicsToMirror while the mirror's source cannot be reached answers each topic with
a retriable NETWORK_EXCEPTION that names the mirror, instead of failing the request
(UNKNOWN_SERVER_ERROR, with a traceback in the broker's log)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from helpers.mirrors import MIRROR, MIRROR_CONFIGS

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.protocol.errors import ErrorCode, KafkaError

SHORT_TIMEOUTS = {"request.timeout.ms": "1000", "default.api.timeout.ms": "2000"}


async def test_an_add_while_the_source_is_down_answers_network_exception_per_topic(
    start_cluster: Any, caplog: pytest.LogCaptureFixture
) -> None:
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic("orders", 1, 1)])).all()
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap, **SHORT_TIMEOUTS})
        await source.stop()
        with caplog.at_level(logging.ERROR, logger="mirrorsim.broker.handlers.dispatcher"):
            results = await admin.add_topics_to_mirror(MIRROR, ["orders"])
    with pytest.raises(KafkaError) as refused:
        results.all()
    assert refused.value.code == ErrorCode.NETWORK_EXCEPTION
    assert f"source cluster of mirror {MIRROR} cannot be reached" in str(refused.value)
    assert refused.value.code.retriable
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
