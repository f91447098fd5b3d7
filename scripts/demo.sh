#!/usr/bin/env bash
# The main job: installs mirrorsim and runs the embedded end-to-end demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh  # the same .venv as the tests; a plain `pip install mirrorsim` also runs the demo
exec .venv/bin/mirrorsim demo "$@"
