#if canImport(Glibc)
import Glibc
#endif

/// The calling thread's CPU time: what a stretch of code on this thread cost (Web Push
/// encryption's metric, `pushworker-dev bench decode`).
package enum ThreadCPUClock {
    /// This thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), in seconds; 0 if the clock fails.
    package static func seconds() -> Double {
        var time = timespec()
        guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time) == 0 else { return 0 }
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
