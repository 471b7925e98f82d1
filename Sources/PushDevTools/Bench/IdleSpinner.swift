import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `bench http --busy-core`: a child process at `SCHED_IDLE` on the client's CPUs, so that the
/// core never halts while the measured sender waits for answers.
///
/// Why (docs/performance.md "`bench http`, `bench-peers`"): on a KVM guest whose idle loop halts
/// at once (`cpuidle haltpoll`, `guest_halt_poll_ns=0`) every answer that finds the core idle
/// pays a VM exit and a wake-up on a cold core. At high provider latency and few requests a
/// second that is a large share of each request's CPU, for every sender alike (h2load, the
/// libcurl floor, our client), and it favours whichever concurrency shape keeps the core
/// busiest. A `SCHED_IDLE` task only runs when nothing else can, is preempted at every
/// wake-up, and its CPU is nobody's: the measured processes' own clocks then show what they cost
/// on a core that stays busy, as on a loaded node. A measurement aid, not a setting of the worker.
package enum IdleSpinner {
    /// `SCHED_IDLE` (sched.h, Linux ≥ 2.6.23; Glibc hides the macro behind `_GNU_SOURCE`).
    static let schedIdle: Int32 = 5

    /// The child's body (`pushworker-dev bench idle-spinner`): lowest priority, spins until its parent
    /// is gone (then `getppid()` changes) or it gets SIGTERM. Exit 1 if the policy is refused.
    package static func spin() -> Int32 {
        var parameters = sched_param()
        parameters.sched_priority = 0
        guard sched_setscheduler(0, schedIdle, &parameters) == 0 else {
            FileHandle.standardError.write(Data("pushworker-dev bench idle-spinner: sched_setscheduler(SCHED_IDLE) failed: errno \(errno)\n".utf8))
            return 1
        }
        let parent = getppid()
        var state: UInt64 = 1
        while getppid() == parent {
            for _ in 0..<200_000 { state = state &* 6364136223846793005 &+ 1442695040888963407 }
        }
        return state == 0 ? 2 : 0 // uses `state`, so the loop is not optimised away
    }

    /// Starts the spinner from this executable, pinned to `cpus`, and waits (≤ 5 s) until it runs
    /// at `SCHED_IDLE`.
    static func start(cpus: String, folder: URL) throws -> ChildProcess {
        let child = try ChildProcess(ChildProcess.selfPath, ["bench", "idle-spinner"], log: folder.appendingPathComponent("idle-spinner.log"))
        let pid = child.process.processIdentifier
        try BenchE2E.pin(pid: pid, cpus: cpus)
        guard ChildProcess.waitFor(timeout: 5, { policy(pid: pid) == schedIdle }) else {
            child.stop(grace: 1)
            throw DemoError("the idle spinner did not switch to SCHED_IDLE: \(child.log().suffix(300))")
        }
        return child
    }

    /// The scheduling policy of `pid` (`/proc/<pid>/stat` field 41), nil if it cannot be read.
    package static func policy(pid: Int32) -> Int32? {
        guard let fields = ProcessStats.statFields(pid: pid), fields.count > 38 else { return nil }
        return Int32(fields[38])
    }
}
