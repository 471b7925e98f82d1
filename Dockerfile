# syntax=docker/dockerfile:1
# pushworker image: build with the official Swift toolchain image, run on Debian bookworm-slim.
#
#   docker build -t pushworker:dev .
#   docker run --rm pushworker:dev --help
#
# Build stage choice: FROM the official `swift:<version>-bookworm` image (same Debian release
# as the runtime stage, so the -dev packages built against match the runtime libraries
# exactly; the toolchain is the publisher's signed build, and the layer is cached). To use a
# mirror or another patch release, pass --build-arg SWIFT_IMAGE=registry.example/swift:6.3.1-bookworm.
# The toolchain must be Swift >= 6.0 on bookworm (a clang with #embed, 19 or later, reads VERSION
# itself; an older one takes it from the generated header below); we develop and test on 6.3.1.
ARG SWIFT_IMAGE=swift:6.3-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${SWIFT_IMAGE} AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# Headers and pkg-config files of the C libraries the Swift modules link (Package.swift
# systemLibrary targets). Versions are bookworm's: librdkafka 2.0.2, OpenSSL 3.0, hiredis
# 0.14.1, nghttp2 1.52, libmicrohttpd 0.9.75, jemalloc 5.3 (the process's malloc) — except libcurl, 8.14 from bookworm-backports
# (same ABI): 7.88.1 resets every HTTP/2 stream (docs/http-client.md). Versions are not pinned
# (DL3008): bookworm keeps one version per package and security updates replace it.
# hadolint ignore=DL3008
RUN export DEBIAN_FRONTEND=noninteractive \
 && echo "deb http://deb.debian.org/debian bookworm-backports main" > /etc/apt/sources.list.d/backports.list \
 && apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends \
      pkg-config librdkafka-dev libcurl4-openssl-dev/bookworm-backports libcurl4/bookworm-backports \
      libssl-dev libhiredis-dev libnghttp2-dev libmicrohttpd-dev libjemalloc-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Manifest first: dependency resolution is cached until Package.swift changes.
COPY Package.swift Package.resolved* ./
RUN swift package resolve
COPY VERSION ./
COPY Sources ./Sources
COPY Tests ./Tests
# The version comes from VERSION; the commit `pushworker version` reports is a build argument
# (the build context has no .git):
#   docker build --build-arg GIT_COMMIT=$(git rev-parse --short=12 HEAD) -t pushworker:$(cat VERSION) .
ARG GIT_COMMIT=unknown
RUN printf '#define PW_GIT_COMMIT "%s"\n#define PW_VERSION "%s"\n' "$(printf '%s' "$GIT_COMMIT" | tr -cd 'A-Za-z0-9._-')" \
      "$(head -n 1 VERSION | tr -cd 'A-Za-z0-9.+-')" > Sources/CPushBuildInfo/generated.h
# Only the production product is built and shipped: `pushworker-dev` (sandbox, dev-broker, demo,
# bench, chaos) is never compiled here, and `pushworker` links none of its modules
# (scripts/check_products.sh, run by `make test`, checks its symbol table).
# --static-swift-stdlib links the Swift runtime and Foundation into the binary (~70 MB), so
# the runtime stage needs only the C libraries below.
RUN --mount=type=cache,target=/src/.build \
    swift build -c release --static-swift-stdlib --product pushworker \
 && install -D -m 0755 "$(swift build -c release --static-swift-stdlib --show-bin-path)/pushworker" /out/pushworker

FROM ${RUNTIME_IMAGE} AS runtime
# Runtime libraries (scripts/check_image_libs.sh checks this list against `ldd pushworker`), and
# tzdata: /usr/share/zoneinfo, the IANA zones of quiet hours and local send times (docs/local-time.md).
# libcurl4 from bookworm-backports (>= 8, see the build stage).
# hadolint ignore=DL3008
RUN export DEBIAN_FRONTEND=noninteractive \
 && echo "deb http://deb.debian.org/debian bookworm-backports main" > /etc/apt/sources.list.d/backports.list \
 && apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends librdkafka1 libcurl4/bookworm-backports libssl3 libhiredis0.14 libnghttp2-14 libmicrohttpd12 libjemalloc2 ca-certificates tzdata \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 65532 pushworker \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin pushworker
COPY --from=build /out/pushworker /usr/local/bin/pushworker
# Topic definitions and message schemas, for `pushworker topics apply|print`.
COPY topics /usr/share/pushworker/topics
LABEL org.opencontainers.image.title="pushworker" \
      org.opencontainers.image.description="Push-notification delivery worker: Kafka jobs to APNs, FCM and Web Push" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PUSHWORKER_HTTP_ADDR=0.0.0.0:9400 \
    PUSHWORKER_CREDENTIALS_DIR=/etc/pushworker/credentials \
    PUSHWORKER_LOG_FORMAT=json
USER 65532:65532
# 9400: metrics and health of `run` and `events`; 9500: `pushworker api` (PUSHWORKER_API_ADDR).
EXPOSE 9400 9500
# SIGTERM is the graceful drain (docs/operations.md); pushworker is PID 1 and handles it itself.
STOPSIGNAL SIGTERM
ENTRYPOINT ["pushworker"]
CMD ["run"]
