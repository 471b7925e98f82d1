#!/usr/bin/env bash
# libFuzzer run of JobDecoder → PreparedJob → PayloadBuilder (Fuzz/JobPipelineFuzzer.swift).
# Usage: scripts/fuzz-libfuzzer.sh [SECONDS]   (default 60). Crashes land in .build/fuzz/crash-*.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_BUDGET="${1:-60}"
OUT=.build/fuzz
mkdir -p "$OUT/corpus"
cp Tests/Fixtures/job/valid/*.json Tests/Fixtures/job/invalid/*.json "$OUT/corpus/" 2>/dev/null || true
swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name PushCore -swift-version 6 \
    $(find Sources/PushCore -name '*.swift') Fuzz/JobPipelineFuzzer.swift -o "$OUT/job-pipeline-fuzzer"
"$OUT/job-pipeline-fuzzer" -max_total_time="$SECONDS_BUDGET" -max_len=65536 -timeout=10 \
    -artifact_prefix="$OUT/" -print_final_stats=1 "$OUT/corpus"
