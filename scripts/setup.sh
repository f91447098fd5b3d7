#!/usr/bin/env bash
# Creates .venv and installs mirrorsim with the extras named in $1 (default "dev").
# Re-running is cheap: it reinstalls only when pyproject.toml or the extras changed.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-dev}"
python3 -m venv .venv 2>/dev/null || python3 -m venv --without-pip .venv
stamp=".venv/.mirrorsim-installed"
want="$(sha256sum pyproject.toml | cut -d' ' -f1) $extras"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e ".[$extras]"
    echo "$want" > "$stamp"
fi
