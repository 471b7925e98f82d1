#!/usr/bin/env bash
# Writes Sources/CPushBuildInfo/commit.h with the git commit of this checkout (`make` runs it
# before every build; the Dockerfile writes the same file from --build-arg GIT_COMMIT).
# Rewrites it (and touches build_info.c, so the C file is recompiled) only when the commit
# changes: an unchanged commit costs nothing. No git, or no repository: "unknown".
set -euo pipefail
cd "$(dirname "$0")/.."
header=Sources/CPushBuildInfo/commit.h
commit=unknown
if command -v git >/dev/null 2>&1 && full=$(git rev-parse --short=12 HEAD 2>/dev/null); then
  commit=$full
  # Changes to tracked files (not the generated header itself, which is ignored) mark the build.
  if ! git diff --quiet HEAD -- 2>/dev/null; then commit="$commit-dirty"; fi
fi
line="#define PW_GIT_COMMIT \"$commit\""
if [ "$(cat "$header" 2>/dev/null || true)" != "$line" ]; then
  printf '%s\n' "$line" > "$header"
  touch Sources/CPushBuildInfo/build_info.c
fi
