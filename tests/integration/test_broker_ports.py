"""A running broker provides every member of the ports its components are typed against.

The coordinator's components (``coordinator/broker_ports.py``, the state topic, the sync
executor), the leader-epoch bump and the mirror management handlers name only Protocols,
not the broker; nothing else checks that the broker the server wires still has what those
Protocols list, with values of the declared classes, so this asks a real one. No module of
``coordinator/`` may take the broker as ``Any`` again.
"""

from __future__ import annotations

import ast
import inspect
import typing
from pathlib import Path

import pytest
from helpers.clusters import StartCluster

from mirrorsim.broker.auth.enforcement import AclHost
from mirrorsim.broker.handlers.broker_port import HandlerBroker
from mirrorsim.broker.handlers.mirror_ports import MirrorLifecyclePort
from mirrorsim.broker.metadata.leader_epochs import LeaderEpochHost, LeaderEpochStore
from mirrorsim.broker.txn.cluster_view import TxnClusterHost
from mirrorsim.broker.txn.service import TxnServiceHost
from mirrorsim.coordinator import broker_ports
from mirrorsim.coordinator.broker_ports import (
    BrokerIdentity,
    InterBrokerClientHost,
    LifecycleHost,
    MetadataManagerHost,
    MirrorCoordinatorHost,
    SourceDeletionsHost,
)
from mirrorsim.coordinator.metadata_manager import MirrorMetadataManager
from mirrorsim.coordinator.mirror_coordinator import MirrorCoordinator
from mirrorsim.coordinator.state_topic import (
    StateTopicCreator,
    StateTopicHost,
    StateTopicReplicas,
)
from mirrorsim.coordinator.sync_executor import SyncDestination

PORTS = (
    HandlerBroker,
    AclHost,
    TxnClusterHost,
    TxnServiceHost,
    BrokerIdentity,
    InterBrokerClientHost,
    MirrorCoordinatorHost,
    SourceDeletionsHost,
    MetadataManagerHost,
    LifecycleHost,
)
PRODUCT = Path(broker_ports.__file__).parent.parent
PACKAGES = (
    "broker",
    "coordinator",
    "fetcher",
    "client",
    "protocol",
    "drills",
    "bench",
    "cli",
    "verify",
    "compare",
)
DEFERRED = {"MirrorCoordinator": MirrorCoordinator, "MirrorMetadataManager": MirrorMetadataManager}
"""Classes the ports name only for type checkers (importing them there would be a cycle)."""


def declared_classes(port: type) -> dict[str, type]:
    """Each property of ``port`` (and its bases) whose declared type is a concrete class or
    a runtime-checkable port."""
    classes: dict[str, type] = {}
    for base in reversed(port.__mro__):
        for name, member in vars(base).items():
            if isinstance(member, property) and member.fget is not None:
                hint = typing.get_type_hints(member.fget, localns=DEFERRED).get("return")
                protocol = getattr(hint, "_is_protocol", False)
                if isinstance(hint, type) and (
                    not protocol or getattr(hint, "_is_runtime_protocol", False)
                ):
                    classes[name] = hint
    return classes


@pytest.mark.parametrize("port", PORTS, ids=lambda port: port.__name__)
async def test_a_started_broker_satisfies_the_port(start_cluster: StartCluster, port: type) -> None:
    cluster = await start_cluster(brokers=1)
    broker = cluster.brokers[0]
    assert isinstance(broker, port)
    for name, cls in declared_classes(port).items():
        assert isinstance(getattr(broker, name), cls), f"{port.__name__}.{name}"


def test_no_module_takes_the_broker_as_any() -> None:
    """No parameter or annotated attribute named ``broker`` is ``Any`` anywhere in the
    product: each component names the port it needs."""
    loose = []
    for package in PACKAGES:
        for path in sorted((PRODUCT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.arg):
                    name, annotation = node.arg, node.annotation
                elif isinstance(node, ast.AnnAssign):
                    target = node.target
                    name = target.attr if isinstance(target, ast.Attribute) else ast.unparse(target)
                    annotation = node.annotation
                else:
                    continue
                if name in ("broker", "_broker") and (
                    annotation is None or ast.unparse(annotation) in ("Any", "object")
                ):
                    loose.append(f"{path.relative_to(PRODUCT)}:{node.lineno} {name}")
    assert loose == []


def test_every_port_is_checked() -> None:
    defined = {
        obj
        for _, obj in inspect.getmembers(broker_ports, inspect.isclass)
        if obj.__module__ == broker_ports.__name__
    }
    assert defined <= set(PORTS)


async def test_a_running_broker_provides_every_port(start_cluster: StartCluster) -> None:
    cluster = await start_cluster()
    (broker,) = cluster.brokers
    assert isinstance(broker, StateTopicHost)
    assert isinstance(broker.controller, StateTopicCreator)
    assert isinstance(broker.replica_manager, StateTopicReplicas)
    assert isinstance(broker, SyncDestination)
    assert isinstance(broker, LeaderEpochHost)
    assert isinstance(broker.store, LeaderEpochStore)
    assert isinstance(broker.mirror_lifecycle, MirrorLifecyclePort)
    assert await broker.mirror_lifecycle.list_mirrors() == []
