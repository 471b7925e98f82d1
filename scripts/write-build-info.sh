#!/usr/bin/env bash
# Writes Sources/CPushBuildInfo/generated.h with the git commit of this checkout and the
# release of the VERSION file (`make` runs it before every build; the Dockerfile writes the
# same file from --build-arg GIT_COMMIT). The compiler also reads VERSION itself (C23 #embed in
# build_info.c), so a plain `swift build` reports the version; the header is the fallback for a
# compiler without #embed. Rewrites the header (and touches build_info.c, so the C file is
# recompiled) only when something changed: an unchanged commit costs nothing. No git, or no
# repository: commit "unknown".
set -euo pipefail
cd "$(dirname "$0")/.."
header=Sources/CPushBuildInfo/generated.h
commit=unknown
if command -v git >/dev/null 2>&1 && full=$(git rev-parse --short=12 HEAD 2>/dev/null); then
  commit=$full
  # Changes to tracked files (not the generated header itself, which is ignored) mark the build.
  if ! git diff --quiet HEAD -- 2>/dev/null; then commit="$commit-dirty"; fi
fi
version=$(head -n 1 VERSION | tr -cd 'A-Za-z0-9.+-')
text=$(printf '#define PW_GIT_COMMIT "%s"\n#define PW_VERSION "%s"' "$commit" "${version:-unknown}")
if [ "$(cat "$header" 2>/dev/null || true)" != "$text" ]; then
  printf '%s\n' "$text" > "$header"
  touch Sources/CPushBuildInfo/build_info.c
fi
