"""Per-listener endpoints: a client is always told the endpoints of the listener it
connected on (Kafka's rule), so a SASL_SSL client is never sent to a PLAINTEXT port.

The registered broker endpoint (``brokers`` table) is the inter-broker listener's; the
``broker_listeners`` table holds every listener of every broker. Endpoints of a running
broker never change, so they are cached until the broker re-registers.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from sqlalchemy import delete, select

from mirrorsim.broker.metadata import schema
from mirrorsim.broker.metadata.store import MetadataStore, transaction

Endpoint = tuple[str, int]


def register_listeners(
    store: MetadataStore, broker_id: int, endpoints: dict[str, Endpoint]
) -> None:
    table = schema.broker_listeners
    with transaction(store.engine) as conn:
        conn.execute(delete(table).where(table.c.broker_id == broker_id))
        conn.execute(
            table.insert(),
            [
                {"broker_id": broker_id, "listener": name, "host": host, "port": port}
                for name, (host, port) in endpoints.items()
            ],
        )


def _load_listeners(store: MetadataStore) -> dict[tuple[int, str], Endpoint]:
    table = schema.broker_listeners
    with transaction(store.engine) as conn:
        return {
            (row.broker_id, row.listener): (row.host, row.port)
            for row in conn.execute(select(table))
        }


class AdvertisedListeners:
    def __init__(self, store: MetadataStore) -> None:
        self._store = store
        self._endpoints: dict[tuple[int, str], Endpoint] = {}
        self._loaded_for: dict[int, Endpoint] = {}
        """Each broker's registered endpoint when its listeners were last read."""

    async def endpoint(
        self, broker_id: int, registered: Endpoint, listener: str
    ) -> Endpoint | None:
        """``broker_id``'s endpoint on ``listener``; None if it has no such listener."""
        if self._loaded_for.get(broker_id) != registered:
            self._endpoints = await asyncio.to_thread(_load_listeners, self._store)
            self._loaded_for[broker_id] = registered
        return self._endpoints.get((broker_id, listener))


_directories: weakref.WeakKeyDictionary[Any, AdvertisedListeners] = weakref.WeakKeyDictionary()


async def advertised_brokers(ctx: Any, brokers: list[Any]) -> list[tuple[Any, str, int]]:
    """(registration, host, port) of each broker as seen from the request's listener.

    On the inter-broker listener this is the registered endpoint; on another listener a
    broker lacking that listener is left out, as Kafka does.
    """
    listener = None if ctx.session is None else ctx.session.listener.name
    inter_broker = getattr(ctx.broker.server, "inter_broker_listener", None)
    if listener is None or inter_broker is None or listener == inter_broker.name:
        return [(b, b.host, b.port) for b in brokers]
    directory = _directories.get(ctx.broker)
    if directory is None or directory._store is not ctx.broker.store:
        directory = _directories[ctx.broker] = AdvertisedListeners(ctx.broker.store)
    result = []
    for b in brokers:
        endpoint = await directory.endpoint(b.broker_id, (b.host, b.port), listener)
        if endpoint is not None:
            result.append((b, endpoint[0], endpoint[1]))
    return result


async def readvertised(ctx: Any, coordinator: dict[str, Any]) -> dict[str, Any]:
    """A FindCoordinator answer with the node's endpoint on the request's listener."""
    if coordinator.get("node_id", -1) < 0:
        return coordinator
    registration = next(
        (b for b in ctx.broker.live_brokers() if b.broker_id == coordinator["node_id"]), None
    )
    if registration is None:
        return coordinator
    for _, host, port in await advertised_brokers(ctx, [registration]):
        return {**coordinator, "host": host, "port": port}
    return coordinator
