"""The one async client connection layer (bootstrap, metadata, connections) and Admin."""

from mirrorsim.client.admin import Admin, SyncAdmin
from mirrorsim.client.cluster import ClusterClient, RequestSpec
from mirrorsim.client.connection import BrokerConnection

__all__ = ["Admin", "BrokerConnection", "ClusterClient", "RequestSpec", "SyncAdmin"]
