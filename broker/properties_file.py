"""Java ``.properties`` files, the format Kafka's tools take for --command-config and
--mirror-config, so operators can hand the same files to both.

Supported: ``key=value``, ``key:value`` and ``key value``; ``#``/``!`` comments; blank
lines; a trailing backslash continues the line (leading whitespace of the continuation is
dropped); ``\\t \\n \\r \\f \\uXXXX`` escapes, and any other escaped character stands for
itself (so ``\\=`` and ``\\:`` can appear in keys).
"""

from __future__ import annotations

from pathlib import Path

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_SEPARATORS = "=: \t\f"


def parse_properties(text: str) -> dict[str, str]:
    properties: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split(line)
        properties[_unescape(key)] = _unescape(value)
    return properties


def load_properties(path: Path | str) -> dict[str, str]:
    return parse_properties(Path(path).read_text(encoding="utf-8"))


def _logical_lines(text: str) -> list[str]:
    lines: list[str] = []
    pending = ""
    continuing = False
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        if not continuing and (not line or line[0] in "#!"):
            continue
        if _ends_with_continuation(line):
            pending += line[:-1]
            continuing = True
            continue
        lines.append(pending + line)
        pending, continuing = "", False
    if pending:
        lines.append(pending)
    return lines


def _ends_with_continuation(line: str) -> bool:
    backslashes = len(line) - len(line.rstrip("\\"))
    return backslashes % 2 == 1


def _split(line: str) -> tuple[str, str]:
    """Key ends at the first unescaped separator; one ``=`` or ``:`` may follow blanks."""
    i = 0
    while i < len(line):
        char = line[i]
        if char == "\\":
            i += 2
            continue
        if char in _SEPARATORS:
            break
        i += 1
    key = line[:i]
    rest = line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\" or i + 1 == len(text):
            out.append(char)
            i += 1
            continue
        escaped = text[i + 1]
        if escaped == "u" and i + 6 <= len(text):
            out.append(chr(int(text[i + 2 : i + 6], 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(escaped, escaped))
        i += 2
    return "".join(out)
