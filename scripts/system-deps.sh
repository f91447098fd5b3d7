#!/usr/bin/env bash
# Installs the Debian packages and npm modules the interop, PostgreSQL and Prometheus tests use
# (the prometheus package brings promtool, which lints a scrape).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v kcat >/dev/null || need+=(kcat)
command -v pg_ctlcluster >/dev/null || need+=(postgresql)
command -v prometheus >/dev/null || need+=(prometheus)
if [ ${#need[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if [ ! -d tests/interop/node/node_modules/kafkajs ]; then
    (cd tests/interop/node && npm install --silent --no-audit --no-fund >/dev/null)
fi
