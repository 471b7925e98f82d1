#include "CPushBuildInfo.h"

/* commit.h: `#define PW_GIT_COMMIT "…"`, generated (see the header). */
#if defined(__has_include)
#if __has_include("commit.h")
#include "commit.h"
#endif
#endif

#ifndef PW_GIT_COMMIT
#define PW_GIT_COMMIT "unknown"
#endif

const char *pw_build_git_commit(void) { return PW_GIT_COMMIT; }
