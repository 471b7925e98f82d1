import Foundation
import PushTestSupport
import Testing

/// SIGTERM semantics of `pushworker run` (docs/operations.md): drain within the grace period; a second
/// signal exits at once; what did not finish is not committed and is redone by the next member.
@Suite("Shutdown", .serialized)
struct ShutdownTests {
    @Test("SIGTERM mid-batch waits for in-flight sends; a second signal exits at once; the unfinished job is redone")
    func secondSignal() throws {
        // Every provider answer takes 8 s: the job is in flight when the signals arrive.
        let env = try E2EEnvironment(sandboxArguments: ["--latency-ms", "8000"])
        let job = E2EEnvironment.job(id: "slow:1", recipients: [
            #"{"userId":"u1","subscriptionId":"slow-1","platform":"ios","token":"\#(E2EEnvironment.apnsToken(70))"}"#,
        ])
        try env.produce("push.jobs.v1", key: "slow:1", value: Array(job.utf8))
        let worker = try env.startWorker(extra: ["PUSHWORKER_SHUTDOWN_GRACE_SECONDS": "60"])
        // Wait until the request reached the sandbox (it is now held there for 8 s).
        let reached = eventually(timeout: 30) {
            ((try? env.sandboxGET("/_sandbox/stats")) ?? "").contains("\"requests\":1")
        }
        #expect(reached, "worker stderr: \(worker.stderr().suffix(1500))")
        worker.signal(SIGTERM)
        #expect(worker.wait(timeout: 1.5) == nil, "the first SIGTERM drains: still running while a send is in flight")
        let second = Date()
        worker.signal(SIGTERM)
        let status = worker.wait(timeout: 5)
        #expect(status != nil && status != 0, "the second signal exits at once, non-zero")
        #expect(Date().timeIntervalSince(second) < 4)

        // Nothing was committed for the unfinished job: the next member redoes it.
        let next = try env.startWorker()
        let results = E2EEnvironment.objects(try env.read("push.results.v1", count: 1, timeout: 60))
        #expect(results.first?["subscriptionId"] as? String == "slow-1", "worker stderr: \(next.stderr().suffix(1500))")
        next.stop(grace: 1)
    }
}
