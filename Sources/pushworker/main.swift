import CMalloc
#if canImport(Glibc)
import Glibc
#endif

// A parent (a test runner, some init systems) may hand us a blocked signal mask: SIGTERM must
// reach the graceful shutdown. A dead peer must be an error, not SIGPIPE.
var allSignals = sigset_t()
sigfillset(&allSignals)
pthread_sigmask(SIG_UNBLOCK, &allSignals, nil)
signal(SIGPIPE, SIG_IGN)
// Allocations of 1 MiB and more (a 10 MB job, its copy, a DLQ copy) are mmap'd and given back
// to the kernel when freed. glibc's default threshold adapts upwards after such a block is
// freed, after which big jobs come from the heap and stay there once freed (with the periodic
// `malloc_trim` of the worker, docs/operations.md "Memory", `pushworker chaos --drill
// hostile-jobs`). Setting it also turns the adaptation off.
_ = pw_malloc_set_mmap_threshold(1 << 20)

exit(PushworkerCLI.main(Array(CommandLine.arguments.dropFirst())))
