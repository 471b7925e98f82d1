import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A pooled HTTP/2 client over one libcurl multi handle, driven by ONE dedicated I/O thread
/// (never the Swift cooperative pool). Requests to the same origin are multiplexed as
/// streams over at most ``HTTPClientConfiguration/maxConnectionsPerHost`` TLS connections
/// (`CURLOPT_PIPEWAIT`: a new request waits for a stream on an existing connection rather
/// than opening another). Redirects are never followed; TLS verification is always on.
///
/// Thread safety: `submit`, `send`, `inFlight` and `shutdown` may be called from any thread.
public final class HTTP2Client: Sendable {
    /// The libcurl this client runs on (validated at `init`).
    public let libcurl: LibcurlInfo
    private let shared: HTTPClientShared
    private let multi: CurlMulti
    private let loop: CurlIOLoop
    private let thread: pthread_t
    private let joinState = Mutex(JoinState.notJoined)
    private let wakeUps = Atomic<Int>(0)
    /// What ``prepare(_:)`` needs of the settings (a copy of them would retain every field).
    private let allowCleartextHTTP2: Bool
    private let requestTimeoutMS: Int

    private enum JoinState { case notJoined, claimed, detached }

    /// Checks libcurl (see ``LibcurlCheck``), loads the CA file, creates the multi handle and
    /// starts the I/O thread. Throws if libcurl is unsuitable or the configuration is invalid.
    public init(configuration: HTTPClientConfiguration) throws(HTTPClientError) {
        libcurl = try LibcurlCheck.validate(allowCleartextHTTP2: configuration.allowCleartextHTTP2)
        let settings = try Self.settings(for: configuration)
        allowCleartextHTTP2 = settings.allowCleartextHTTP2
        requestTimeoutMS = settings.requestTimeoutMS
        multi = try CurlMulti.make(
            maxConnectionsPerHost: configuration.maxConnectionsPerHost,
            maxTotalConnections: configuration.maxTotalConnections,
            maxConcurrentStreams: configuration.maxConcurrentStreams,
            coalesceWrites: configuration.coalesceWrites
        )
        shared = HTTPClientShared()
        loop = CurlIOLoop(
            multi: multi, shared: shared, settings: settings,
            maxFreeHandles: min(4096, configuration.maxTotalConnections * configuration.maxConcurrentStreams)
        )
        var thread = pthread_t()
        let box = Unmanaged.passRetained(loop).toOpaque()
        let rc = pthread_create(&thread, nil, { argument in
            guard let argument else { return nil }
            let loop = Unmanaged<CurlIOLoop>.fromOpaque(argument).takeRetainedValue()
            // Named so that per-thread CPU (/proc/<pid>/task/*/stat, `top -H`, `perf --tid`)
            // tells the HTTP I/O thread apart: `bench e2e` compares it with libcurl's floor.
            nameCurrentThread("pw-http-io")
            loop.run()
            return nil
        }, box)
        guard rc == 0 else {
            Unmanaged<CurlIOLoop>.fromOpaque(box).release()
            throw HTTPClientError("cannot start the HTTP I/O thread: pthread_create returned \(rc)")
        }
        self.thread = thread
    }

    deinit {
        // Never blocks: the thread may be the one dropping the last reference (a completion).
        if shared.state.withLock({ $0.beginShutdown(deadline: .now) }) { multi.wakeup() }
        let detach = joinState.withLock { state -> Bool in
            guard state == .notJoined else { return false }
            state = .detached
            return true
        }
        if detach { pthread_detach(thread) }
    }

    /// Queues `request`; thread-safe and non-blocking. `completion` runs exactly once, on the
    /// I/O thread (keep it cheap: hand the result on, never block), or immediately on the
    /// caller's thread: with `.invalidRequest` for a request no transfer may send
    /// (``prepare(_:)``), with `.shutdown` after ``shutdown(drainTimeout:)``.
    public func submit(_ request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, HTTPTransportError>) -> Void) {
        let prepared: PreparedHTTPRequest
        do {
            prepared = try prepare(request)
        } catch {
            return completion(.failure(error))
        }
        submit(prepared, completion: completion)
    }

    /// Checks `request` and lays it out for libcurl (``PreparedHTTPRequest``), on the caller's
    /// thread, so that the I/O thread only points an easy handle at it. Throws
    /// `.invalidRequest` for what no transfer may send: an invalid method, header name, CR/LF/NUL
    /// in a value, whitespace or controls in the URL (``HTTPRequestValidation``), `http://`
    /// unless the client allows h2c.
    public func prepare(_ request: HTTPRequest) throws(HTTPTransportError) -> PreparedHTTPRequest {
        PreparedHTTPRequest(try CurlPreparedRequest(request, allowCleartextHTTP2: allowCleartextHTTP2, requestTimeoutMS: requestTimeoutMS))
    }

    /// Queues a request ``prepare(_:)`` made (by this client); otherwise as ``submit(_:completion:)-(HTTPRequest,_)``.
    public func submit(_ request: PreparedHTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, HTTPTransportError>) -> Void) {
        let onLoopThread = pthread_equal(pthread_self(), thread) != 0
        let action = shared.state.withLock { $0.submit(HTTPSubmission(request: request.prepared, completion: completion), holdable: !onLoopThread) }
        switch action {
        case .wakeUp:
            // From a completion (the I/O thread): the loop starts it before it waits, no wake-up.
            if onLoopThread { loop.submittedOnLoopThread() } else { wakeUp() }
        case .queued: break
        case .reject: completion(.failure(.shutdown))
        }
    }

    /// Submissions from other threads than the I/O thread queue without waking it until the
    /// matching ``releaseWakeUps()`` (which wakes it once): a burst of sends — a claim batch —
    /// leaves in one loop turn, so its streams go out together and, under provider latency,
    /// their answers come back together (docs/http-client.md "Bursts"). Nests; always pair it.
    /// The I/O thread's own submissions are never held, and a held queue waits at most until
    /// the loop's next turn (≤ 1 s when idle), so a missing release delays but never loses work.
    public func holdWakeUps() { shared.state.withLock { $0.holdWakeUps() } }

    /// Ends one ``holdWakeUps()``; the last one wakes the I/O thread if a submission waits.
    public func releaseWakeUps() {
        if shared.state.withLock({ $0.releaseWakeUps() }) { wakeUp() }
    }

    /// Wake-ups sent to the I/O thread so far (tests: one per held burst).
    var wakeUpsSent: Int { wakeUps.load(ordering: .relaxed) }

    private func wakeUp() {
        wakeUps.add(1, ordering: .relaxed)
        multi.wakeup()
    }

    /// Sends `request` and waits for its outcome. Cancelling the task does not cancel the
    /// transfer; it ends by its timeout at the latest.
    public func send(_ request: HTTPRequest) async -> Result<HTTPResponse, HTTPTransportError> {
        await withCheckedContinuation { continuation in
            submit(request) { continuation.resume(returning: $0) }
        }
    }

    /// Requests submitted and not yet completed.
    public var inFlight: Int { shared.state.withLock { $0.inFlight } }

    /// CPU seconds the I/O thread has used so far (its own CPU clock, `pthread_getcpuclockid`),
    /// nil once it has stopped. For benchmarks (`pushworker-dev bench http`); do not call it while
    /// another thread runs ``shutdown(drainTimeout:)``.
    public var ioThreadCPUSeconds: Double? {
        guard !loop.finished.withLock({ $0 }) else { return nil }
        var clock = clockid_t()
        guard pthread_getcpuclockid(thread, &clock) == 0 else { return nil }
        var time = timespec()
        guard clock_gettime(clock, &time) == 0 else { return nil }
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// Easy handles the I/O thread created so far (tests: a handle is reused request after request).
    var handlesCreated: Int { loop.handlesCreated.load(ordering: .relaxed) }

    /// Open connections corked between loop turns, and uncork rounds so far (tests: the
    /// write coalescing is on and lifted before every wait).
    var corkedConnections: Int { loop.corkedConnections.load(ordering: .relaxed) }
    var corkFlushes: Int { loop.corkFlushes.load(ordering: .relaxed) }

    /// Stops accepting requests (later submits fail with `.shutdown`), lets in-flight ones
    /// finish for up to `drainTimeout`, then fails the rest — `.shutdown` if they had not started
    /// sending, `.unanswered(.shutdown, _)` if they had — and stops the I/O thread. Blocks the caller until then (call it from a thread that may block, not from
    /// the cooperative pool in a hot path). Idempotent; from a completion it does not wait.
    public func shutdown(drainTimeout: Duration) {
        if shared.state.withLock({ $0.beginShutdown(deadline: .now + drainTimeout) }) { multi.wakeup() }
        if pthread_equal(pthread_self(), thread) != 0 { return }
        let shouldJoin = joinState.withLock { state -> Bool in
            guard state == .notJoined else { return false }
            state = .claimed
            return true
        }
        if shouldJoin {
            pthread_join(thread, nil)
        } else {
            while !loop.finished.withLock({ $0 }) { usleep(1000) }
        }
    }

    static func settings(for configuration: HTTPClientConfiguration) throws(HTTPClientError) -> TransferSettings {
        let positive: [(String, Int)] = [
            ("maxConnectionsPerHost", configuration.maxConnectionsPerHost),
            ("maxConcurrentStreams", configuration.maxConcurrentStreams),
            ("maxTotalConnections", configuration.maxTotalConnections),
            ("maxResponseBodyBytes", configuration.maxResponseBodyBytes),
        ]
        for (name, value) in positive where value < 1 {
            throw HTTPClientError("\(name) must be at least 1 (got \(value))")
        }
        for (name, value) in [("connectTimeout", configuration.connectTimeout), ("requestTimeout", configuration.requestTimeout), ("keepAliveInterval", configuration.keepAliveInterval)] where value <= .zero {
            throw HTTPClientError("\(name) must be positive")
        }
        var bundle: CurlCABundle?
        if let caFile = configuration.caFile {
            bundle = CurlCABundle(try CABundleBuilder.combined(extraFile: caFile, systemBundlePath: CurlCABundle.defaultBundlePath()))
        }
        if let problem = HTTPClientConfiguration.proxyProblem(configuration.proxy) { throw HTTPClientError(problem) }
        let keepAliveMS = configuration.keepAliveInterval.wholeMilliseconds
        return TransferSettings(
            protocols: configuration.allowCleartextHTTP2 ? "https,http" : "https",
            allowCleartextHTTP2: configuration.allowCleartextHTTP2,
            connectTimeoutMS: configuration.connectTimeout.wholeMilliseconds,
            requestTimeoutMS: configuration.requestTimeout.wholeMilliseconds,
            keepAliveSeconds: max(1, keepAliveMS / 1000),
            keepAliveMS: keepAliveMS,
            maxResponseBodyBytes: configuration.maxResponseBodyBytes,
            proxy: configuration.proxy ?? "",
            noProxy: configuration.noProxy ?? "",
            resolveOverrides: configuration.resolveOverrides,
            caBundle: bundle,
            maxConnectionsPerHost: configuration.maxConnectionsPerHost,
            maxTotalConnections: configuration.maxTotalConnections
        )
    }
}

/// A request ``HTTP2Client/prepare(_:)`` checked and laid out for libcurl: submit it with
/// ``HTTP2Client/submit(_:completion:)-(PreparedHTTPRequest,_)`` of the same client (its
/// timeout and `http://` check are that client's). Immutable; holds the bytes libcurl reads.
public struct PreparedHTTPRequest: Sendable {
    let prepared: CurlPreparedRequest

    init(_ prepared: CurlPreparedRequest) { self.prepared = prepared }

    /// The request carries a TLS client certificate.
    public var hasClientCertificate: Bool { prepared.clientCertificate != nil }
}

/// Builds the CA bytes for ``HTTPClientConfiguration/caFile``: the system bundle followed
/// by the extra file, so the extra file *adds* trust.
enum CABundleBuilder {
    static let fallbackSystemBundle = "/etc/ssl/certs/ca-certificates.crt"

    static func combined(extraFile: String, systemBundlePath: String?) throws(HTTPClientError) -> [UInt8] {
        guard let extra = readWholeFile(extraFile) else {
            throw HTTPClientError("cannot read CA file \(extraFile)")
        }
        guard containsPEMCertificate(extra) else {
            throw HTTPClientError("CA file \(extraFile) holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
        // A missing system bundle (e.g. a distroless image) leaves the extra file alone.
        var bytes = readWholeFile(systemBundlePath ?? fallbackSystemBundle) ?? readWholeFile(fallbackSystemBundle) ?? []
        if let last = bytes.last, last != 0x0A { bytes.append(0x0A) }
        bytes.append(contentsOf: extra)
        return bytes
    }

    static func containsPEMCertificate(_ bytes: [UInt8]) -> Bool {
        let marker = Array("-----BEGIN CERTIFICATE-----".utf8)
        guard bytes.count >= marker.count else { return false }
        for start in 0...(bytes.count - marker.count) where bytes[start] == marker[0] {
            if bytes[start..<(start + marker.count)].elementsEqual(marker) { return true }
        }
        return false
    }
}

/// Sets the calling thread's name (Linux `comm`, at most 15 bytes) through
/// `/proc/thread-self/comm` (glibc's `pthread_setname_np` is not visible to Swift without
/// `_GNU_SOURCE`). Best effort: a missing /proc leaves the inherited name.
func nameCurrentThread(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    _ = Array(name.utf8.prefix(15)).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}
