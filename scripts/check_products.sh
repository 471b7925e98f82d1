#!/usr/bin/env bash
# The production executable holds no development code (docs/operations.md "Images"):
#
#   scripts/check_products.sh [BUILD_DIR]      (default: .build/debug)
#
# 1. BUILD_DIR/pushworker's symbol table (`nm`, and `nm -D` for what it imports from shared
#    libraries) holds no symbol of the development modules — PushSandbox, PushInbox, PushChaos,
#    PushKafkaMock, PushDevTools (Swift mangles the module name into every symbol) — and no
#    reference to librdkafka's mock cluster (rd_kafka_mock_*) or to nghttp2's server side
#    (the sandbox's HTTP/2 server: nghttp2_session_server_*).
# 2. BUILD_DIR/pushworker-dev, the development executable, exists beside it, and the same
#    patterns do find the development code in it (the check is not blind).
#
# Prints what it checked; exits 1 on a failure, 2 when a binary is missing or has no symbols.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.build/debug}
production=$dir/pushworker
development=$dir/pushworker-dev
pattern='PushSandbox|PushInbox|PushChaos|PushKafkaMock|PushDevTools|rd_kafka_mock_|nghttp2_session_server_'
command -v nm >/dev/null || { echo "check_products: nm is required (binutils)" >&2; exit 2; }
for binary in "$production" "$development"; do
    [[ -x $binary ]] || { echo "check_products: no executable $binary: build both products first (swift build)" >&2; exit 2; }
done

symbols() { { nm "$1" 2>/dev/null || true; nm -D "$1" 2>/dev/null || true; } | awk '{ print $NF }'; }

status=0
count=$(symbols "$production" | wc -l)
if (( count < 1000 )); then
    echo "check_products: $production has $count symbols (stripped?): cannot check it" >&2
    exit 2
fi
found=$(symbols "$production" | grep -E "$pattern" | sort -u || true)
if [[ -n $found ]]; then
    echo "FAIL pushworker holds development code ($(wc -l <<<"$found") symbols), e.g.:"
    sed -n '1,5s/^/  /p' <<<"$found"
    status=1
else
    echo "ok   pushworker: $count symbols, none of PushSandbox, PushInbox, PushChaos, PushKafkaMock, PushDevTools, rd_kafka_mock_*, nghttp2_session_server_*"
fi
development_symbols=$(symbols "$development")
for module in PushSandbox PushInbox PushChaos PushKafkaMock PushDevTools rd_kafka_mock_; do
    if ! grep -q "$module" <<<"$development_symbols"; then
        echo "FAIL pushworker-dev has no $module symbol: the check's patterns no longer match what they exclude"
        status=1
    fi
done
if (( status == 0 )); then
    echo "ok   pushworker-dev: present, and holds the development modules the check looks for"
fi
exit $status
