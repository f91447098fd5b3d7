"""What hand-written encoders have in common, requests and responses alike.

The framing asks any message that encodes itself for its API key and whether its
version is flexible (which decides the header's version); an encoder of one API's
versions knows both from the version of the message at hand, checked when it is made.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from typing import ClassVar


class EncodedMessage(ABC):
    """A request or response body that encodes itself."""

    __slots__ = ()

    @property
    @abstractmethod
    def api_key(self) -> int: ...

    @property
    @abstractmethod
    def flexible(self) -> bool:
        """Whether its version is flexible: the header is the flexible one if so."""


@dataclasses.dataclass(frozen=True, slots=True)
class OneVersion:
    """A message of ``version``, one of ``VERSIONS`` of API ``API_KEY``."""

    API_KEY: ClassVar[int]
    VERSIONS: ClassVar[range]
    FIRST_FLEXIBLE: ClassVar[int]

    version: int

    def __post_init__(self) -> None:
        if self.version not in self.VERSIONS:
            raise ValueError(f"no {type(self).__name__} of version {self.version}")

    @property
    def api_key(self) -> int:
        return self.API_KEY

    @property
    def flexible(self) -> bool:
        """Whether the version is flexible, which also decides the header's version."""
        return self.version >= self.FIRST_FLEXIBLE
