#ifndef PUSHSPAWN_H
#define PUSHSPAWN_H

#include <stddef.h>
#include <sys/types.h>

/// Starts `path` as a child process with posix_spawn(3) and returns its pid, or -errno.
///
/// Why not Foundation's `Process`: on Linux its `run()` scans /proc/self/fd copying each
/// dirent's whole 256-byte `d_name`, reading past glibc's readdir buffer; when the next page is
/// unmapped the parent crashes (swift-corelibs-foundation PR #5472, seen here with Swift 6.3.1 in
/// about one full test run in five).
///
/// `args` and `env` are NUL-terminated strings packed one after the other (`args_len` / `env_len`
/// bytes in all, the last string's NUL included); `args` holds argv[0] first. `env` NULL: the
/// parent's environment. `cwd` NULL: the parent's directory. `stdin_fd`, `stdout_fd`,
/// `stderr_fd`: descriptors the child gets as 0, 1, 2; -1 is /dev/null. Every other descriptor
/// is closed in the child, every signal is unblocked and back to its default action there, and
/// with `own_group` the child leads a process group of its own (a ^C to the parent's group does
/// not reach it; it is stopped by pid).
pid_t pw_spawn(const char *path, const char *args, size_t args_len, const char *env, size_t env_len,
               const char *cwd, int stdin_fd, int stdout_fd, int stderr_fd, int own_group);

/// waitpid(2) for `pid`: 1 = exited (`*code` the exit status), 2 = killed by a signal (`*code`
/// the signal), 0 = still running (`block` 0), -errno on error.
int pw_spawn_wait(pid_t pid, int block, int *code);

#endif
