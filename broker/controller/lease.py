"""The controller lease: a single row that names the active controller until it expires.

A broker becomes the active controller by taking the row when it is empty, released or
expired, and stays it by renewing the row before ``expires_at``. Each takeover bumps the
controller epoch, so writes can be fenced by ``(broker id, controller epoch)``. The table
lives in the shared metadata database and is created on first use (idempotent), like the
rest of the schema's first migration.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Engine,
    Integer,
    MetaData,
    Table,
    select,
    update,
)

from mirrorsim.broker.metadata.store import transaction

LEASE_ROW = 1
NO_CONTROLLER = -1

lease_metadata = MetaData()

controller_lease = Table(
    "controller_lease",
    lease_metadata,
    Column("id", Integer, primary_key=True),
    Column("broker_id", Integer, nullable=False),
    Column("controller_epoch", Integer, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
)


@dataclass(frozen=True, slots=True)
class LeaseState:
    """Who holds the lease, at which controller epoch, and until when (epoch ms)."""

    broker_id: int
    controller_epoch: int
    expires_at: int

    def is_held_by(self, broker_id: int, now_ms: int) -> bool:
        return self.broker_id == broker_id and self.expires_at > now_ms

    def holder(self, now_ms: int) -> int:
        return self.broker_id if self.expires_at > now_ms else NO_CONTROLLER


class ControllerLease:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        with transaction(engine) as conn:
            lease_metadata.create_all(conn, checkfirst=True)

    def acquire_or_renew(self, broker_id: int, now_ms: int, timeout_ms: int) -> LeaseState:
        """Take the lease if it is free or expired, renew it if it is ours; the row after."""
        with transaction(self._engine) as conn:
            current = _read(conn)
            if current is None:
                fresh = LeaseState(broker_id, 1, now_ms + timeout_ms)
                conn.execute(
                    controller_lease.insert().values(
                        id=LEASE_ROW,
                        broker_id=fresh.broker_id,
                        controller_epoch=fresh.controller_epoch,
                        expires_at=fresh.expires_at,
                    )
                )
                return fresh
            if current.is_held_by(broker_id, now_ms):
                fresh = LeaseState(broker_id, current.controller_epoch, now_ms + timeout_ms)
            elif current.expires_at <= now_ms:
                fresh = LeaseState(broker_id, current.controller_epoch + 1, now_ms + timeout_ms)
            else:
                return current
            conn.execute(
                update(controller_lease)
                .where(controller_lease.c.id == LEASE_ROW)
                .values(
                    broker_id=fresh.broker_id,
                    controller_epoch=fresh.controller_epoch,
                    expires_at=fresh.expires_at,
                )
            )
            return fresh

    def release(self, broker_id: int, controller_epoch: int) -> None:
        """Give the lease up at once (clean shutdown) so a successor need not wait it out."""
        with transaction(self._engine) as conn:
            conn.execute(
                update(controller_lease)
                .where(
                    (controller_lease.c.id == LEASE_ROW)
                    & (controller_lease.c.broker_id == broker_id)
                    & (controller_lease.c.controller_epoch == controller_epoch)
                )
                .values(expires_at=0)
            )

    def current(self) -> LeaseState | None:
        with transaction(self._engine) as conn:
            return _read(conn)


def _read(conn: Connection) -> LeaseState | None:
    row = conn.execute(select(controller_lease).where(controller_lease.c.id == LEASE_ROW)).first()
    if row is None:
        return None
    return LeaseState(row.broker_id, row.controller_epoch, row.expires_at)


def holds_lease(conn: Connection, broker_id: int, controller_epoch: int, now_ms: int) -> bool:
    """Inside a write transaction: is ``(broker_id, controller_epoch)`` still the controller?"""
    current = _read(conn)
    return (
        current is not None
        and current.controller_epoch == controller_epoch
        and current.is_held_by(broker_id, now_ms)
    )
