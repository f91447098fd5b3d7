"""Refusing an add that would mirror a topic back to the cluster it is mirrored from.

The spec supports bidirectional mirroring only for different topics: a topic mirrored
from A to B and back from B to A at once has both copies read-only, each truncating to
the other's epochs, and no record can be trusted to survive ("Unlike MirrorMaker 2,
Cluster Mirroring does not need special cycle detection or prevention logic because the
read-only enforcement inherently blocks the conditions that would create infinite
replication loops"). Chains (A to B to C) are supported, so being a mirror topic on the
source is not enough to refuse: the add is refused when the source reports the topic in
one of its mirrors whose source cluster is this one, in a state that still copies from
here or will (a failback in progress). A source that cannot say (UNKNOWN: its
``__mirror_state`` coordinator is down, as in a disaster) or is letting the topic go
(STOPPING, STOPPED) does not refuse the add.

The source is asked with its own ListMirrors and DescribeMirrors. A source that does not
serve them, or does not let the mirror's principal describe its mirrors, has none this
check can see, and the add goes ahead as before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping

from mirrorsim.client.admin import Admin
from mirrorsim.protocol.errors import ErrorCode, KafkaError

COPYING_STATES = frozenset({"PREPARING", "MIRRORING", "PAUSING", "PAUSED", "FAILED"})
"""Source-side partition states that make the add a cycle."""


async def mirrored_from_here(
    source: Admin, cluster_id: str, topics: Iterable[str]
) -> Mapping[str, str]:
    """Of ``topics``, those the source holds in ``COPYING_STATES`` in a mirror whose source
    cluster is ``cluster_id``; each with that mirror's name."""
    wanted = set(topics)
    if not wanted or not cluster_id:
        return {}
    with contextlib.suppress(KafkaError, OSError, TimeoutError):
        listed = await source.list_mirrors()
        back = [m.name for m in listed if m.source_cluster_id == cluster_id]
        if not back:
            return {}
        described = await source.describe_mirrors(back)
        return {
            p.topic: name
            for name, mirror in described.items()
            for p in mirror.partitions
            if p.topic in wanted and p.state in COPYING_STATES
        }
    return {}


CLOSES_A_CYCLE = "mirroring it back would close a cycle"
"""The words every cycle refusal carries, so a caller can tell it from the other
INVALID_REQUESTs of an add (a partition still STOPPING, which passes)."""


def closes_a_cycle(error: KafkaError) -> bool:
    return error.code == ErrorCode.INVALID_REQUEST and CLOSES_A_CYCLE in error.message


def cycle_error(topic: str, source_mirror: str) -> KafkaError:
    return KafkaError(
        ErrorCode.INVALID_REQUEST,
        f"Topic {topic} is mirrored from this cluster by mirror {source_mirror} on the "
        f"source; {CLOSES_A_CYCLE}, which cluster mirroring does not "
        f"support. Remove it from {source_mirror} first",
    )
