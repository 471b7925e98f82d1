#!/usr/bin/env bash
# Installs what pushworker needs on Debian bookworm, quietly and idempotently (run as root).
# Only missing packages are installed; `apt-get update` runs once, and only if something is missing.
set -euo pipefail

packages=(
  pkg-config
  librdkafka-dev        # Kafka client + mock cluster (rdkafka_mock.h), 2.0.2
  libcurl4-openssl-dev  # HTTP/2 client (7.88.1, nghttp2 inside; TLS h2 only, see docs/http-client.md)
  libssl-dev            # libcrypto/libssl: JWTs, RFC 8291, the sandbox's TLS
  libhiredis-dev        # Redis client (0.14.1)
  libnghttp2-dev        # the sandbox's HTTP/2 server
  libmicrohttpd-dev     # metrics/health/events listener
  redis-server          # tests and demo start their own on a free loopback port
  nghttp2-client        # h2load: the load reference for `pushworker bench`
  nghttp2-server        # nghttpd: an independent HTTP/2 peer for the HTTP client tests
  wrk                   # load generator of `pushworker bench events`
  openssl ca-certificates curl python3-venv
)

missing=()
for package in "${packages[@]}"; do
  [[ "$package" == \#* ]] && continue
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]})); then
  echo "installing: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v swift >/dev/null 2>&1 && [ ! -x /opt/swift/usr/bin/swift ]; then
  echo "error: the Swift 6 toolchain is not installed (expected swift on PATH or /opt/swift/usr/bin/swift)" >&2
  exit 69
fi
