#!/usr/bin/env bash
# libFuzzer targets (Tests/Fuzz/*Fuzzer.swift, docs/reliability.md "Fuzzing"), built with swiftc
# -sanitize=fuzzer,address over the library modules they test, and run on their corpus
# (Tests/Fuzz/corpus/<target>/).
#
# Usage: scripts/fuzz-libfuzzer.sh build [TARGET...]         build only
#        scripts/fuzz-libfuzzer.sh smoke [TARGET...]         build, then FUZZ_SMOKE_SECONDS (4) per target
#        scripts/fuzz-libfuzzer.sh run [SECONDS] [TARGET...] build, then SECONDS (60) per target
# No TARGET: every target. Exits non-zero when a module or target does not compile, or a target
# crashes, times out or breaks an invariant; the input that did it is kept in
# .build/fuzz/artifacts/<target>/ (crash-*, timeout-*, leak-*). New inputs `run` finds go to
# .build/fuzz/found/<target>/ (read again by the next run), never into the repository's corpus.
#
# smoke builds without optimisation (-Onone: about three times faster to compile), run with -O;
# FUZZ_OPTIMIZATION overrides either. A module is rebuilt only when one of its sources, a module
# before it or this script is newer than its object.
set -euo pipefail
cd "$(dirname "$0")/.."
PATH="$PATH:/opt/swift/usr/bin"

# The library modules, in dependency order: name, then its sources (directories or files).
# A module given as some files of a SwiftPM target (PushHTTP, PushRuntime, PushEvents, PushAPI) is built
# from those files alone under the target's name, so that the targets stay free of libcurl,
# Kafka, Redis and libmicrohttpd; a file listed here that starts using another file of its target
# fails this build, and the list grows.
MODULES=(
  "PushEncoding Sources/PushEncoding"
  "PushCore Sources/PushCore"
  "PushProviders Sources/PushProviders"
  "CPushCrypto Sources/CPushCrypto"
  "PushCrypto Sources/PushCrypto"
  "PushHTTP Sources/PushHTTP/ClientCertificate.swift"
  "PushRuntime Sources/PushRuntime/Credentials/AppCredentials.swift"
  "PushEvents Sources/PushEvents/EventRoute.swift Sources/PushEvents/TrackingEvent.swift Sources/PushEvents/TrustedProxies.swift"
  "PushAPI Sources/PushAPI/APIError.swift Sources/PushAPI/APIRoute.swift Sources/PushAPI/CampaignJSON.swift Sources/PushAPI/JobSubmission.swift"
)
# The targets: name (its corpus folder), its source in Tests/Fuzz, the modules it links.
TARGETS=(
  "job-pipeline JobPipelineFuzzer.swift PushEncoding PushCore PushProviders"
  "msgid MsgIDFuzzer.swift PushEncoding PushCore"
  "tracking-route TrackingRouteFuzzer.swift PushEncoding PushCore PushEvents"
  "provider-answers ProviderAnswersFuzzer.swift PushEncoding PushCore PushProviders"
  "credentials CredentialsFuzzer.swift PushEncoding PushCore CPushCrypto PushCrypto PushHTTP PushRuntime"
  "api-request APIRequestFuzzer.swift PushEncoding PushCore PushAPI"
)
# Fixture folders a target reads as corpus too, beside Tests/Fuzz/corpus/<target>/.
declare -A FIXTURES=([job-pipeline]="Tests/Fixtures/job/valid Tests/Fixtures/job/invalid")
# C modules: SwiftPM's system-library module maps (headers, link names) are used as they are.
C_INCLUDES=(-I Sources/COpenSSL)
C_LIBRARIES=(-lssl -lcrypto)

mode="${1:-}"
shift || true
case "$mode" in
  build) optimization="${FUZZ_OPTIMIZATION:--Onone}"; seconds=0 ;;
  smoke) optimization="${FUZZ_OPTIMIZATION:--Onone}"; seconds="${FUZZ_SMOKE_SECONDS:-4}" ;;
  run)
    optimization="${FUZZ_OPTIMIZATION:--O}"; seconds=60
    if [[ "${1:-}" =~ ^[0-9]+$ ]]; then seconds="$1"; shift; fi ;;
  *) sed -n '6,8p' "$0" | sed 's/^# //' >&2; exit 64 ;;
esac

wanted=("$@")
selected=()
for entry in "${TARGETS[@]}"; do
  read -r name _ <<<"$entry"
  if ((${#wanted[@]} == 0)) || [[ " ${wanted[*]} " == *" $name "* ]]; then selected+=("$entry"); fi
done
if ((${#selected[@]} == 0)); then echo "no such target: ${wanted[*]}" >&2; exit 64; fi

build="$PWD/.build/fuzz/${optimization#-}"
mkdir -p "$build/modules"
swift_flags=(-sanitize=fuzzer,address "$optimization" -g -parse-as-library -swift-version 6
             -enable-upcoming-feature ExistentialAny -package-name pushworker
             -I "$build/modules" "${C_INCLUDES[@]}")

# Sources of a module: its directories' .swift (or .c) files and its listed files.
sources_of() {
  local path
  for path in "$@"; do
    if [ -d "$path" ]; then find "$path" \( -name '*.swift' -o -name '*.c' \) | LC_ALL=C sort; else echo "$path"; fi
  done
}

needed=" "
for entry in "${selected[@]}"; do read -r _ _ deps <<<"$entry"; needed+="$deps "; done

started=$(date +%s)
earlier=()   # the objects of the modules before this one (it may import them)
for entry in "${MODULES[@]}"; do
  read -r module paths <<<"$entry"
  [[ "$needed" == *" $module "* ]] || continue
  # shellcheck disable=SC2086
  mapfile -t files < <(sources_of $paths)
  object="$build/$module.o"
  if [ -f "$object" ] && [ -z "$(find "${files[@]}" "${earlier[@]}" "$0" -newer "$object" | head -1)" ]; then
    earlier+=("$object")
    continue
  fi
  earlier+=("$object")
  echo "fuzz: building $module ($optimization)"
  if [[ "${files[0]}" == *.c ]]; then
    # A C target: its objects, and a module map for its include/ header (what SwiftPM generates).
    include="$PWD/$paths/include"
    mkdir -p "$build/modules/$module"
    printf 'module %s {\n  umbrella "%s"\n  export *\n}\n' "$module" "$include" > "$build/modules/$module/module.modulemap"
    objects=()
    for file in "${files[@]}"; do
      clang -c -O2 -fPIC -I "$include" "$file" -o "$build/$module-$(basename "$file" .c).o"
      objects+=("$build/$module-$(basename "$file" .c).o")
    done
    ld.lld -r "${objects[@]}" -o "$object"
  else
    swiftc -c -wmo "${swift_flags[@]}" -I "$build/modules" -module-name "$module" \
      -emit-module -emit-module-path "$build/modules/$module.swiftmodule" "${files[@]}" -o "$object"
  fi
done

for entry in "${selected[@]}"; do
  read -r name source deps <<<"$entry"
  binary="$build/$name-fuzzer"
  objects=()
  for module in $deps; do objects+=("$build/$module.o"); done
  if [ ! -x "$binary" ] || [ -n "$(find "Tests/Fuzz/$source" "${objects[@]}" "$0" -newer "$binary" | head -1)" ]; then
    echo "fuzz: building $name-fuzzer"
    swiftc "${swift_flags[@]}" -use-ld=lld -module-name "Fuzz_${name//-/_}" "Tests/Fuzz/$source" "${objects[@]}" "${C_LIBRARIES[@]}" -o "$binary"
  fi
done
echo "fuzz: built in $(($(date +%s) - started)) s ($build)"
((seconds > 0)) || exit 0

# Leaks are checked after every input that allocates more than it frees (libFuzzer's
# -detect_leaks), not at exit: what a process keeps for its lifetime (OpenSSL's legacy provider,
# loaded once for old PKCS#12 files) is not a leak.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}leak_check_at_exit=0"
# A failed invariant (fatalError) is reported by libFuzzer and ASan; Swift's own backtracer would
# only add noise to the log.
export SWIFT_BACKTRACE=enable=no
status=0
for entry in "${selected[@]}"; do
  read -r name _ <<<"$entry"
  corpus="Tests/Fuzz/corpus/$name"
  # smoke starts from the repository's corpus alone (a clean folder for what it finds), so its
  # time does not grow with what earlier runs found; run resumes from what they found.
  found=".build/fuzz/found/$name"
  if [ "$mode" = smoke ]; then found=".build/fuzz/smoke/$name"; rm -rf "$found"; fi
  artifacts=".build/fuzz/artifacts/$name/"
  mkdir -p "$found" "$artifacts"
  echo "fuzz: $name for ${seconds} s on $corpus"
  log="$build/$name.log"
  # The first folder receives new inputs; the repository's corpus is only read.
  if "$build/$name-fuzzer" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$artifacts" -print_final_stats=1 "$found" "$corpus" ${FIXTURES[$name]:-} >"$log" 2>&1; then
    grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' "$log" | tail -2 | sed "s/^/fuzz: $name: /"
  else
    status=1
    tail -60 "$log"
    echo "fuzz: $name FAILED (log: $log; reproducer in $artifacts)" >&2
  fi
done
echo "fuzz: done in $(($(date +%s) - started)) s"
exit $status
