#include "CPushBuildInfo.h"

/* generated.h: `#define PW_GIT_COMMIT "…"` (and PW_VERSION), written by `make` and the
 * Dockerfile (see the header). */
#if defined(__has_include)
#if __has_include("generated.h")
#include "generated.h"
#endif
#endif

#ifndef PW_GIT_COMMIT
#define PW_GIT_COMMIT "unknown"
#endif

const char *pw_build_git_commit(void) { return PW_GIT_COMMIT; }

/* The version is the repository's VERSION file, read by the compiler (C23 #embed), so a plain
 * `swift build` reports it too; a compiler without #embed falls back to generated.h. */
#if defined(__has_embed)
#if __has_embed("../../VERSION") == 1 /* __STDC_EMBED_FOUND__: present and not empty */
#pragma clang diagnostic ignored "-Wc23-extensions"
static const char pw_version_file[] = {
#embed "../../VERSION"
    , 0};
#define PW_VERSION_FROM_FILE 1
#endif
#endif

#ifndef PW_VERSION
#define PW_VERSION "unknown"
#endif

const char *pw_build_version(void) {
#ifdef PW_VERSION_FROM_FILE
    return pw_version_file;
#else
    return PW_VERSION;
#endif
}
