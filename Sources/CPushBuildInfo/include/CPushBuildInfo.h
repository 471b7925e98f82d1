#ifndef PW_CPUSHBUILDINFO_H
#define PW_CPUSHBUILDINFO_H

/* What the build knows about itself (`pushworker version`, pushworker_build_info).
 *
 * The version is the first line of the repository's VERSION file (the one place a release
 * number is written; scripts/check_version.py keeps the chart and CHANGELOG.md on it). The git
 * commit comes from generated.h beside build_info.c, written by `make` (scripts/
 * write-build-info.sh) and by the Dockerfile (--build-arg GIT_COMMIT), never committed: a plain
 * `swift build` of a clean clone has none and says "unknown". */

/* The commit the binary was built from (`a1b2c3d4e5f6`, `-dirty` when the tree had changes), or
 * "unknown". A static string: never freed. */
const char *pw_build_git_commit(void);

/* The VERSION file's text ("0.3.0\n": the caller takes its first line), or "unknown". A static
 * string: never freed. */
const char *pw_build_version(void);

#endif
