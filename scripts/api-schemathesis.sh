#!/usr/bin/env bash
# The HTTP API against its own contract (`make test-api`, part of `make test`): starts a
# redis-server, a development Kafka broker (`pushworker-dev dev-broker`, the jobs topic) and
# `pushworker api` on free loopback ports with a throwaway tokens file, then runs schemathesis
# (scripts/requirements-ci.txt, in the .build/ops-venv venv) on GET /openapi.json with a bearer
# token: every operation, its examples, the coverage cases (edge and negative values) and
# fuzzed cases, each answer checked for
#   not_a_server_error, status_code_conformance, content_type_conformance,
#   response_schema_conformance.
# Then the API must still be running, with no crash in its log, and exit 0 on SIGTERM.
# Everything started is stopped on exit (also on failure or Ctrl-C).
#
#   scripts/api-schemathesis.sh    API_EXAMPLES=N examples per operation (default 100),
#                                  API_SEED=N the seed (default 42), API_CHECKS=a,b the checks
#                                  (default the four above; `all` for every check schemathesis has)
#
# Exits 1 when schemathesis reports a failure or the API misbehaves, 2 when a service does not start.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/opt/swift/usr/bin"
examples=${API_EXAMPLES:-100}
seed=${API_SEED:-42}
checks=${API_CHECKS:-not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance}
bin=.build/debug/pushworker
dev=.build/debug/pushworker-dev
if [[ ! -x $bin || ! -x $dev ]]; then
  swift build -j 2 >/dev/null
fi
venv=$PWD/.build/ops-venv
if [[ ! -x $venv/bin/python ]]; then
  python3 -m venv "$venv"
fi
if [[ ! -x $venv/bin/schemathesis ]]; then
  "$venv/bin/pip" install -q --disable-pip-version-check -r scripts/requirements-ci.txt
fi

work=$(mktemp -d)
pids=()
# shellcheck disable=SC2329  # run by the EXIT trap
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { "$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
  local seconds=$1 what=$2
  shift 2
  for _ in $(seq $((seconds * 10))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  echo "api-schemathesis: $what did not come up within $seconds s" >&2
  return 1
}

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no >"$work/redis.log" 2>&1 &
pids+=($!)
wait_for 10 "redis-server" redis-cli -p "$redis_port" ping || exit 2

"$dev" dev-broker --bootstrap-file "$work/bootstrap" --topic push.jobs.v1:3 >"$work/broker.log" 2>&1 &
pids+=($!)
wait_for 20 "the development broker" test -s "$work/bootstrap" || exit 2

token="schemathesis-$("$venv/bin/python" -c 'import secrets; print(secrets.token_hex(16))')"
printf '# api-schemathesis.sh: one throwaway token\n%s\n' "$token" >"$work/tokens"
api_port=$(free_port)
env PUSHWORKER_KAFKA_BROKERS="$(cat "$work/bootstrap")" PUSHWORKER_REDIS_URL="redis://127.0.0.1:$redis_port" \
  PUSHWORKER_API_TOKENS_FILE="$work/tokens" PUSHWORKER_API_ADDR="127.0.0.1:$api_port" PUSHWORKER_API_PRODUCE_TIMEOUT_SECONDS=10 \
  PUSHWORKER_LOG_FORMAT=text PUSHWORKER_LOG_LEVEL=warning "$bin" api >"$work/api.log" 2>&1 &
api_pid=$!
pids+=("$api_pid")
base="http://127.0.0.1:$api_port"
wait_for 30 "pushworker api (/readyz)" curl -sf "$base/readyz" || { cat "$work/api.log" >&2; exit 2; }

echo "== schemathesis $("$venv/bin/schemathesis" --version | awk '{print $NF}') against $base/openapi.json ($examples examples per operation, seed $seed)"
status=0
# From the scratch folder: schemathesis keeps its caches in the working directory.
(cd "$work" && "$venv/bin/schemathesis" run "$base/openapi.json" \
  --header "Authorization: Bearer $token" \
  --checks "$checks" \
  --phases examples,coverage,fuzzing \
  --max-examples "$examples" --seed "$seed" --generation-database none \
  --workers 1 --request-timeout 30 --no-color --suppress-health-check all \
  --report junit --report-junit-path "$work/junit.xml") || status=1

if [[ -f $work/junit.xml ]]; then
  "$venv/bin/python" - "$work/junit.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
cases = sum(int(s.get("tests", 0)) for s in suites)
failures = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
names = sorted(c.get("name", "") for s in suites for c in s.findall("testcase"))
print(f"api-schemathesis: {cases} operations tested, {failures} with failures: {', '.join(names)}")
PY
fi
if ! kill -0 "$api_pid" 2>/dev/null; then
  echo "FAIL pushworker api is no longer running:" >&2
  tail -50 "$work/api.log" >&2
  exit 1
fi
if grep -qiE 'fatal error|Fatal|panic|crash' "$work/api.log"; then
  echo "FAIL pushworker api logged a crash:" >&2
  grep -iE 'fatal|panic|crash' "$work/api.log" | head -20 >&2
  status=1
fi
kill -TERM "$api_pid"
api_exit=0
wait "$api_pid" || api_exit=$?
if [[ $api_exit -ne 0 ]]; then
  echo "FAIL pushworker api exited $api_exit on SIGTERM" >&2
  tail -20 "$work/api.log" >&2
  status=1
fi
if [[ $status -eq 0 ]]; then echo "ok   schemathesis: no failure; pushworker api survived and exited 0"; fi
exit $status
