import Foundation
import PushRuntime
import PushCore
import PushDelivery
import PushTestSupport
import PushWorker
import Synchronization
import Testing

extension Deliverer {
    /// `deliver` for tests: blocks until the completion ran (nil after `timeoutSeconds`).
    func deliverWaiting(_ request: ProviderRequest, credentials: AppCredentials, timeoutSeconds: Double = 20) -> Attempt? {
        let box = Mutex<Attempt?>(nil)
        let done = DispatchSemaphore(value: 0)
        deliver(request, credentials: credentials) { attempt in
            box.withLock { $0 = attempt }
            done.signal()
        }
        _ = done.wait(timeout: .now() + timeoutSeconds)
        return box.withLock { $0 }
    }
}

extension SandboxServer {
    /// `POST /_sandbox/faults` with `json`; records an issue unless the sandbox answers 200.
    func setFaults(_ json: String) throws {
        let reply = try curl("POST", "/_sandbox/faults", body: Data(json.utf8))
        #expect(reply.status == 200, "\(reply.text)")
    }
}
