#!/usr/bin/env bash
# The test command: installs everything the suites need, then runs them.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh -m slow`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
bash scripts/system-deps.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check . >/dev/null
exec .venv/bin/python -m pytest "$@"
