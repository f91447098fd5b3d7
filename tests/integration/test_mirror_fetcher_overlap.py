"""A mirror fetcher appends a response's batches while the source answers the next Fetch.

The source and the destination are separate brokers (separate processes in production):
a fetcher that appended before asking again would leave each side idle while the other
works. Here the fetcher is the real one between two real clusters; the client's request
writes and responses and the destination's appends are recorded in order.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers.mirrors import MIRROR, MIRROR_CONFIGS, mirrored_up_to, produce

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.client.connection import BrokerConnection, InFlightRequest
from mirrorsim.coordinator.mirror_coordinator import MirrorCoordinator

FETCH_KEY = 1
PARTITIONS = 2
RECORDS_PER_PARTITION = 2500
"""About 2.5 MiB of 1 KiB values per partition: at 1 MiB per partition and Fetch, several
responses carry batches."""


class Events:
    """Fetch requests written, Fetch responses received, and appends, in order."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.log: list[str] = []
        start = BrokerConnection._start
        response = InFlightRequest.response
        append = MirrorCoordinator.append

        def recorded_start(connection: BrokerConnection, body: Any, key: int, version: int) -> Any:
            in_flight = start(connection, body, key, version)
            if key == FETCH_KEY:
                self.log.append("written")
            return in_flight

        async def recorded_response(in_flight: InFlightRequest) -> Any:
            answer = await response(in_flight)
            if getattr(answer, "__api_key__", None) == FETCH_KEY:
                self.log.append("answered")
            return answer

        def recorded_append(coordinator: MirrorCoordinator, *args: Any) -> None:
            self.log.append("append")
            append(coordinator, *args)

        monkeypatch.setattr(BrokerConnection, "_start", recorded_start)
        monkeypatch.setattr(InFlightRequest, "response", recorded_response)
        monkeypatch.setattr(MirrorCoordinator, "append", recorded_append)

    def in_flight_at_appends(self) -> list[int]:
        """For each append, how many Fetches were written and not yet answered."""
        written = answered = 0
        at_appends = []
        for event in self.log:
            if event == "written":
                written += 1
            elif event == "answered":
                answered += 1
            else:
                at_appends.append(written - answered)
        return at_appends


async def test_batches_are_appended_while_the_next_fetch_is_out(
    start_cluster: Any, wait_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic("bulk", PARTITIONS, 1)])).all()
    await produce(
        source.bootstrap,
        "bulk",
        PARTITIONS * RECORDS_PER_PARTITION,
        tag="v" * 1024,
        partitions=PARTITIONS,
    )
    events = Events(monkeypatch)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, ["bulk"])).all()
    for p in range(PARTITIONS):
        await wait_for(lambda p=p: mirrored_up_to(source, destination, "bulk", p), timeout=30)

    at_appends = events.in_flight_at_appends()
    assert len(at_appends) >= 2 * PARTITIONS, events.log
    assert all(in_flight == 1 for in_flight in at_appends), events.log
