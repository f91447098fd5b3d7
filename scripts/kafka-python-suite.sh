#!/usr/bin/env bash
# Runs kafka-python's own integration tests (admin, consumer, producer) against one
# mirrorsim broker started from kafka-python's own server.properties template.
#
#   bash scripts/kafka-python-suite.sh [CHECKOUT]
#
# CHECKOUT is a kafka-python source tree; without it one is cloned from GitHub into
# .client-suite/kafka-python. .client-suite also holds the venv, the broker's data, its
# log and the suite's. Needs PyPI (and GitHub without CHECKOUT); the result is
# summarised in docs/interop.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$root/.client-suite"
mkdir -p "$work"
src="${1:-$work/kafka-python}"
port=19092
version=4.0.0

if [ ! -d "$src" ]; then
    git clone -q https://github.com/dpkp/kafka-python "$src"
fi
src="$(cd "$src" && pwd)"
if [ ! -x "$work/venv/bin/python" ]; then
    python3 -m venv "$work/venv"
fi
"$work/venv/bin/pip" install -q -e "$src" pytest pytest-mock pytest-timeout \
    lz4 python-snappy zstandard crc32c xxhash
# The fixture looks for a Kafka install even when it is told to use an external broker.
mkdir -p "$src/servers/$version/kafka-bin"

rm -rf "$work/data"
sed -e "s/{broker_id}/0/; s/{controller_bootstrap_host}/127.0.0.1/; s/{controller_port}/$((port + 1))/g" \
    -e "s/{transport}/PLAINTEXT/g; s/{host}/127.0.0.1/g; s/{port}/$port/g" \
    -e "s/{sasl_config}//; s/{ssl_config}//; s/{acl_config}//" \
    -e "s#{tmp_dir}#$work/data#; s/{partitions}/4/; s/{replicas}/1/" \
    "$src/servers/resources/default/kafka.properties" > "$work/server.properties"

"$root/.venv/bin/mirrorsim" up --server-properties "$work/server.properties" \
    --log-level warning 2> "$work/broker.log" &
broker=$!
trap 'kill $broker 2>/dev/null; wait $broker 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done

cd "$src"
KAFKA_URI="PLAINTEXT://127.0.0.1:$port" KAFKA_VERSION="$version" \
    "$work/venv/bin/python" -m pytest -p no:cacheprovider -p no:logging --timeout 120 -q -rfE \
    test/integration/test_admin_integration.py \
    test/integration/test_consumer_integration.py \
    test/integration/test_producer_integration.py | tee "$work/suite.log" | tail -n 20
