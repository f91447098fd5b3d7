"""Java ``.properties`` files, the format Kafka's tools take for --command-config and
--mirror-config, so operators can hand the same files to both.

Read with ``javaproperties``, which follows ``java.util.Properties.load(InputStream)``
exactly as Kafka's ``Utils.loadProps`` uses it: the file's bytes are ISO-8859-1 (a non-ASCII
character is written as a ``\\uXXXX`` escape), ``=``, ``:`` or whitespace separate key and
value, ``#``/``!`` start comments, a trailing backslash continues the line.
"""

from __future__ import annotations

from pathlib import Path

import javaproperties


def parse_properties(text: str) -> dict[str, str]:
    """The properties of a file's text (already decoded)."""
    return dict(javaproperties.loads(text))


def load_properties(path: Path | str) -> dict[str, str]:
    """The properties of a file, decoded as Java does (ISO-8859-1)."""
    with open(path, "rb") as file:
        return dict(javaproperties.load(file))
