#define _GNU_SOURCE
#include "pushspawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/// Splits `count` bytes of packed NUL-terminated strings into a NULL-terminated vector (malloc'd;
/// the strings stay in `packed`). NULL on allocation failure or a missing final NUL.
static char **unpack(const char *packed, size_t count) {
    if (count == 0 || packed[count - 1] != '\0') return NULL;
    size_t strings = 0;
    for (size_t i = 0; i < count; i++) if (packed[i] == '\0') strings++;
    char **vector = calloc(strings + 1, sizeof(char *));
    if (vector == NULL) return NULL;
    size_t n = 0, start = 0;
    for (size_t i = 0; i < count; i++) {
        if (packed[i] == '\0') { vector[n++] = (char *)packed + start; start = i + 1; }
    }
    vector[n] = NULL;
    return vector;
}

pid_t pw_spawn(const char *path, const char *args, size_t args_len, const char *env, size_t env_len,
               const char *cwd, int stdin_fd, int stdout_fd, int stderr_fd, int own_group) {
    if (path == NULL || args == NULL) return -EINVAL;
    char **argv = unpack(args, args_len);
    if (argv == NULL) return -EINVAL;
    char **envp = environ;
    if (env != NULL) {
        envp = env_len == 0 ? calloc(1, sizeof(char *)) : unpack(env, env_len);
        if (envp == NULL) { free(argv); return -EINVAL; }
    }
    int null_fd = -1;
    if (stdin_fd < 0 || stdout_fd < 0 || stderr_fd < 0) {
        null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null_fd < 0) { int e = errno; free(argv); if (envp != environ) free(envp); return -e; }
    }
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) { if (null_fd >= 0) close(null_fd); free(argv); if (envp != environ) free(envp); return -rc; }
    rc = posix_spawnattr_init(&attributes);
    if (rc != 0) {
        posix_spawn_file_actions_destroy(&actions);
        if (null_fd >= 0) close(null_fd);
        free(argv);
        if (envp != environ) free(envp);
        return -rc;
    }
    int sources[3] = { stdin_fd < 0 ? null_fd : stdin_fd, stdout_fd < 0 ? null_fd : stdout_fd, stderr_fd < 0 ? null_fd : stderr_fd };
    // dup2 clears FD_CLOEXEC on the target; a source already at its target is passed through
    // (glibc clears the flag then too, as POSIX.1-2024 asks).
    for (int target = 0; rc == 0 && target < 3; target++) {
        rc = posix_spawn_file_actions_adddup2(&actions, sources[target], target);
    }
    if (rc == 0 && cwd != NULL) rc = posix_spawn_file_actions_addchdir_np(&actions, cwd);
    if (rc == 0) rc = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | (own_group ? POSIX_SPAWN_SETPGROUP : 0);
    if (rc == 0) rc = posix_spawnattr_setsigmask(&attributes, &none);
    if (rc == 0) rc = posix_spawnattr_setsigdefault(&attributes, &all);
    if (rc == 0 && own_group) rc = posix_spawnattr_setpgroup(&attributes, 0);
    if (rc == 0) rc = posix_spawnattr_setflags(&attributes, flags);
    pid_t pid = -1;
    if (rc == 0) rc = posix_spawn(&pid, path, &actions, &attributes, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (null_fd >= 0) close(null_fd);
    free(argv);
    if (envp != environ) free(envp);
    return rc == 0 ? pid : -rc;
}

int pw_spawn_wait(pid_t pid, int block, int *code) {
    int status = 0;
    pid_t got;
    do { got = waitpid(pid, &status, block ? 0 : WNOHANG); } while (got < 0 && errno == EINTR);
    if (got < 0) return -errno;
    if (got == 0) return 0;
    if (WIFEXITED(status)) { *code = WEXITSTATUS(status); return 1; }
    if (WIFSIGNALED(status)) { *code = WTERMSIG(status); return 2; }
    return 0;
}
