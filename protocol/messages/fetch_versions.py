"""The Fetch versions both directions of the hand-written encoders share: what each
version added to the request and to the response alike (``FetchRequest.json``,
``FetchResponse.json``, plus v19's ``MirrorLeaderEpoch``)."""

from __future__ import annotations

FETCH_KEY = 1
MIN_VERSION = 4
MAX_VERSION = 19
FIRST_WITH_LOG_START_OFFSET = 5
FIRST_WITH_SESSIONS = 7
FIRST_FLEXIBLE = 12
FIRST_WITH_TOPIC_ID = 13
FIRST_WITH_MIRROR_LEADER_EPOCH = 19
UNSET = -1
"""An epoch, offset or id that is not known: Kafka's -1, the default of every such field."""
