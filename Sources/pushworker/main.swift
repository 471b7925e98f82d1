#if canImport(Glibc)
import Glibc
#endif

// A parent (a test runner, some init systems) may hand us a blocked signal mask: SIGTERM must
// reach the graceful shutdown. A dead peer must be an error, not SIGPIPE.
var allSignals = sigset_t()
sigfillset(&allSignals)
pthread_sigmask(SIG_UNBLOCK, &allSignals, nil)
signal(SIGPIPE, SIG_IGN)
// The allocator is jemalloc (CPushAllocator, linked into this executable): unused memory goes
// back to the kernel ~2 s after it is freed, and an idle worker purges the rest (docs/operations.md
// "Memory", `pushworker chaos --drill hostile-jobs`).

exit(PushworkerCLI.main(Array(CommandLine.arguments.dropFirst())))
