"""KIP-1279 messages in kio's dataclass style, registered with the registry on import.

Importing this package makes ``registry.request_class``/``response_class`` serve the
mirror RPCs (API keys 94-105, version 0), Fetch v19, CreateTopics v8, DescribeConfigs v5 and
IncrementalAlterConfigs v2. The registry imports it on first lookup, so every caller sees them.
"""

from mirrorsim.protocol.messages import (
    add_topics_to_mirror,
    bump_leader_epochs,
    create_mirror,
    create_topics_v8,
    delete_mirror,
    describe_mirrors,
    fetch_v19,
    last_mirrored_epochs,
    list_mirrors,
    mirror_config_versions,
    pause_mirror_topics,
    read_mirror_states,
    remove_topics_from_mirror,
    resume_mirror_topics,
    write_mirror_states,
)
from mirrorsim.protocol.messages.constants import (
    CREATE_TOPICS_MIRROR_VERSION,
    DESCRIBE_CONFIGS_MIRROR_VERSION,
    FETCH_MIRROR_VERSION,
    INCREMENTAL_ALTER_CONFIGS_MIRROR_VERSION,
    MirrorApiKey,
)
from mirrorsim.protocol.registry import register

MESSAGE_PAIRS: tuple[tuple[int, int, type, type], ...] = (
    (
        MirrorApiKey.CREATE_MIRROR,
        0,
        create_mirror.CreateMirrorRequest,
        create_mirror.CreateMirrorResponse,
    ),
    (
        MirrorApiKey.ADD_TOPICS_TO_MIRROR,
        0,
        add_topics_to_mirror.AddTopicsToMirrorRequest,
        add_topics_to_mirror.AddTopicsToMirrorResponse,
    ),
    (
        MirrorApiKey.REMOVE_TOPICS_FROM_MIRROR,
        0,
        remove_topics_from_mirror.RemoveTopicsFromMirrorRequest,
        remove_topics_from_mirror.RemoveTopicsFromMirrorResponse,
    ),
    (
        MirrorApiKey.LAST_MIRRORED_EPOCHS,
        0,
        last_mirrored_epochs.LastMirroredEpochsRequest,
        last_mirrored_epochs.LastMirroredEpochsResponse,
    ),
    (
        MirrorApiKey.LIST_MIRRORS,
        0,
        list_mirrors.ListMirrorsRequest,
        list_mirrors.ListMirrorsResponse,
    ),
    (
        MirrorApiKey.DESCRIBE_MIRRORS,
        0,
        describe_mirrors.DescribeMirrorsRequest,
        describe_mirrors.DescribeMirrorsResponse,
    ),
    (
        MirrorApiKey.READ_MIRROR_STATES,
        0,
        read_mirror_states.ReadMirrorStatesRequest,
        read_mirror_states.ReadMirrorStatesResponse,
    ),
    (
        MirrorApiKey.WRITE_MIRROR_STATES,
        0,
        write_mirror_states.WriteMirrorStatesRequest,
        write_mirror_states.WriteMirrorStatesResponse,
    ),
    (
        MirrorApiKey.PAUSE_MIRROR_TOPICS,
        0,
        pause_mirror_topics.PauseMirrorTopicsRequest,
        pause_mirror_topics.PauseMirrorTopicsResponse,
    ),
    (
        MirrorApiKey.RESUME_MIRROR_TOPICS,
        0,
        resume_mirror_topics.ResumeMirrorTopicsRequest,
        resume_mirror_topics.ResumeMirrorTopicsResponse,
    ),
    (
        MirrorApiKey.DELETE_MIRROR,
        0,
        delete_mirror.DeleteMirrorRequest,
        delete_mirror.DeleteMirrorResponse,
    ),
    (
        MirrorApiKey.BUMP_LEADER_EPOCHS,
        0,
        bump_leader_epochs.BumpLeaderEpochsRequest,
        bump_leader_epochs.BumpLeaderEpochsResponse,
    ),
    (1, FETCH_MIRROR_VERSION, fetch_v19.FetchRequest, fetch_v19.FetchResponse),
    (
        19,
        CREATE_TOPICS_MIRROR_VERSION,
        create_topics_v8.CreateTopicsRequest,
        create_topics_v8.CreateTopicsResponse,
    ),
    (
        32,
        DESCRIBE_CONFIGS_MIRROR_VERSION,
        mirror_config_versions.DescribeConfigsRequest,
        mirror_config_versions.DescribeConfigsResponse,
    ),
    (
        44,
        INCREMENTAL_ALTER_CONFIGS_MIRROR_VERSION,
        mirror_config_versions.IncrementalAlterConfigsRequest,
        mirror_config_versions.IncrementalAlterConfigsResponse,
    ),
)
"""(api key, version, request class, response class) for every message this package adds."""

for _api_key, _version, _request, _response in MESSAGE_PAIRS:
    register(int(_api_key), _version, _request, _response)
