"""DescribeConfigs v5 and IncrementalAlterConfigs v2: the versions that may name a MIRROR
config resource (type 64).

KIP-1279 bumps both APIs without changing a field, so that a client learns from
ApiVersions whether a broker manages mirror configs instead of sending one and reading the
error. Each new version is kio's newest one under the new version number.
"""

from dataclasses import dataclass
from typing import ClassVar

from kio.schema.describe_configs.v4 import request as describe_request
from kio.schema.describe_configs.v4 import response as describe_response
from kio.schema.incremental_alter_configs.v1 import request as alter_request
from kio.schema.incremental_alter_configs.v1 import response as alter_response
from kio.static.primitive import i16

from mirrorsim.protocol.messages.constants import (
    DESCRIBE_CONFIGS_MIRROR_VERSION,
    INCREMENTAL_ALTER_CONFIGS_MIRROR_VERSION,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsRequest(describe_request.DescribeConfigsRequest):
    __version__: ClassVar[i16] = i16(DESCRIBE_CONFIGS_MIRROR_VERSION)


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsResponse(describe_response.DescribeConfigsResponse):
    __version__: ClassVar[i16] = i16(DESCRIBE_CONFIGS_MIRROR_VERSION)


@dataclass(frozen=True, slots=True, kw_only=True)
class IncrementalAlterConfigsRequest(alter_request.IncrementalAlterConfigsRequest):
    __version__: ClassVar[i16] = i16(INCREMENTAL_ALTER_CONFIGS_MIRROR_VERSION)


@dataclass(frozen=True, slots=True, kw_only=True)
class IncrementalAlterConfigsResponse(alter_response.IncrementalAlterConfigsResponse):
    __version__: ClassVar[i16] = i16(INCREMENTAL_ALTER_CONFIGS_MIRROR_VERSION)
