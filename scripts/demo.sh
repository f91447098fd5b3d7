#!/usr/bin/env bash
# The main job: installs mirrorsim and runs the embedded end-to-end demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh "dev,spark"
exec .venv/bin/mirrorsim demo "$@"
