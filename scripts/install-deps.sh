#!/usr/bin/env bash
# Installs what pushworker needs on Debian bookworm, quietly and idempotently (run as root).
# Only missing packages are installed; `apt-get update` runs once, and only if something is missing.
set -euo pipefail

packages=(
  pkg-config
  librdkafka-dev        # Kafka client + mock cluster (rdkafka_mock.h), 2.0.2
  libcurl4-openssl-dev  # HTTP/2 client: >= 8 from bookworm-backports, see below and docs/http-client.md
  libssl-dev            # libcrypto/libssl: JWTs, RFC 8291, the sandbox's TLS
  libhiredis-dev        # Redis client (0.14.1)
  libnghttp2-dev        # the sandbox's HTTP/2 server
  libmicrohttpd-dev     # metrics/health/events listener
  libjemalloc-dev       # the process's malloc (CPushAllocator; docs/performance.md "The allocator")
  redis-server          # tests and demo start their own on a free loopback port
  redis-tools           # redis-cli: the test Redis Cluster is created with `redis-cli --cluster create`
  redis-sentinel        # redis-sentinel: the Sentinel tests and the sentinel-failover drill
  nghttp2-client        # h2load: the load reference for `pushworker-dev bench`
  nghttp2-server        # nghttpd: an independent HTTP/2 peer for the HTTP client tests
  wrk                   # load generator of `pushworker-dev bench events`
  chromium              # headless browser for the sandbox inbox's browser tests (docs/sandbox.md "Inbox")
  fonts-dejavu-core     # a font for chromium's screenshots
  openssl ca-certificates curl python3-venv
)
# The IANA time zones of quiet hours and local send times (docs/local-time.md); slim images lack them.
if [ ! -d /usr/share/zoneinfo ]; then packages+=(tzdata); fi

missing=()
for package in "${packages[@]}"; do
  [[ "$package" == \#* ]] && continue
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

# libcurl >= 8 (docs/http-client.md): Debian 12's 7.88.1 sends RST_STREAM after every HTTP/2
# stream, and providers with rapid-reset protection then close the connection every ~1000
# requests. bookworm-backports has 8.14 with the same ABI (package names unchanged); only these
# three packages come from there.
backports=()
curl_version=$(dpkg-query -W -f='${Version}' libcurl4-openssl-dev 2>/dev/null || true)
if ! dpkg --compare-versions "${curl_version:-0}" ge 8; then
  backports=(libcurl4/bookworm-backports libcurl4-openssl-dev/bookworm-backports curl/bookworm-backports)
  # The plain names would install 7.88 first: take them out of the bookworm list.
  filtered=()
  for package in "${missing[@]}"; do
    case "$package" in libcurl4-openssl-dev|curl) ;; *) filtered+=("$package") ;; esac
  done
  missing=("${filtered[@]}")
  if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "deb http://deb.debian.org/debian bookworm-backports main" > /etc/apt/sources.list.d/pushworker-backports.list
  fi
fi

if ((${#missing[@]} + ${#backports[@]})); then
  echo "installing: ${missing[*]} ${backports[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" "${backports[@]}" >/dev/null
fi

if ! command -v swift >/dev/null 2>&1 && [ ! -x /opt/swift/usr/bin/swift ]; then
  echo "error: the Swift 6 toolchain is not installed (expected swift on PATH or /opt/swift/usr/bin/swift)" >&2
  exit 69
fi
