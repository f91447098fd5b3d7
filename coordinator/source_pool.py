"""One persistent Admin client per mirror's source cluster, for the metadata sync.

Opened lazily with the mirror's own connection settings (bootstrap servers, security
protocol, SASL, TLS, client timeouts) and kept across refresh cycles, as the spec's
MirrorMetadataManager keeps persistent connections to every source. It is reopened when
any of those settings changes, and only then: the mirror's sync filters change often and
say nothing about how to connect.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping

from mirrorsim.broker.metadata.mirror_configs import BOOTSTRAP_SERVERS, forces_reconnect
from mirrorsim.client.admin import Admin

log = logging.getLogger(__name__)


def connection_settings(mirror_config: Mapping[str, str]) -> dict[str, str]:
    """The part of a mirror's configuration that decides how its source is reached."""
    return {name: value for name, value in mirror_config.items() if forces_reconnect(name)}


def sync_client_id(broker_id: int, mirror: str) -> str:
    return f"broker-{broker_id}-mirror-metadata-{mirror}"


class SourcePool:
    def __init__(self, broker_id: int) -> None:
        self._broker_id = broker_id
        self._admins: dict[str, Admin] = {}
        self._settings: dict[str, dict[str, str]] = {}

    def __contains__(self, mirror: str) -> bool:
        return mirror in self._admins

    async def admin(self, mirror: str, mirror_config: Mapping[str, str]) -> Admin:
        """The mirror's source Admin, (re)opened when its connection settings changed."""
        settings = connection_settings(mirror_config)
        current = self._admins.get(mirror)
        if current is not None and self._settings.get(mirror) == settings:
            return current
        if current is not None:
            log.info("mirror %s: source connection settings changed; reconnecting", mirror)
            await self.close(mirror)
        if not settings.get(BOOTSTRAP_SERVERS):
            raise ValueError(f"mirror {mirror} has no {BOOTSTRAP_SERVERS}")
        admin = Admin(
            settings[BOOTSTRAP_SERVERS],
            config=settings,
            client_id=sync_client_id(self._broker_id, mirror),
        )
        await admin.start()
        self._admins[mirror] = admin
        self._settings[mirror] = settings
        return admin

    async def close(self, mirror: str) -> None:
        admin = self._admins.pop(mirror, None)
        self._settings.pop(mirror, None)
        if admin is not None:
            with contextlib.suppress(Exception):
                await admin.close()

    async def close_all(self) -> None:
        for mirror in list(self._admins):
            await self.close(mirror)
