"""Run a block with every descriptor this process may open taken: the file system's own
EMFILE, not a stand-in for it."""

from __future__ import annotations

import os
import resource
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def no_descriptors_left() -> Iterator[None]:
    """Every descriptor this process may open is taken until the block ends."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 32, hard))
    hog: list[int] = []
    try:
        while True:
            try:
                hog.append(os.open(os.devnull, os.O_RDONLY))
            except OSError:
                break
        yield
    finally:
        for fd in hog:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
