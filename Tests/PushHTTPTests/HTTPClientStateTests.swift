@testable import PushHTTP
import Testing

@Suite("HTTPClientState (no I/O)")
struct HTTPClientStateTests {
    private func submission() throws -> HTTPSubmission {
        HTTPSubmission(request: try CurlPreparedRequest(HTTPRequest(url: "https://example.invalid/"), settings: .forTests()), completion: { _ in })
    }

    @Test("only the first submit after the I/O thread took the queue asks for a wake-up")
    func wakeUpOncePerBatch() throws {
        var state = HTTPClientState()
        let first = state.submit(try submission()), second = state.submit(try submission())
        #expect(first == .wakeUp)
        #expect(second == .queued)
        #expect(state.inFlight == 2)
        var batch: [HTTPSubmission] = []
        let phase = state.takePending(into: &batch)
        #expect(phase == .running)
        #expect(batch.count == 2)
        #expect(state.pending.isEmpty)
        let third = state.submit(try submission())
        #expect(third == .wakeUp)
        state.completed(2)
        #expect(state.inFlight == 1)
    }

    @Test("held wake-ups: submissions queue silently, the last release asks for one wake-up; the I/O thread's own are never held")
    func heldWakeUps() throws {
        var state = HTTPClientState()
        state.holdWakeUps()
        state.holdWakeUps()
        let r1 = state.submit(try submission())
        #expect(r1 == .queued)
        let r2 = state.submit(try submission())
        #expect(r2 == .queued)
        let r3 = state.releaseWakeUps()
        #expect(!r3, "an inner release does not wake")
        #expect(state.holds == 1)
        let r4 = state.releaseWakeUps()
        #expect(r4, "the last release wakes, once")
        let r5 = state.submit(try submission())
        #expect(r5 == .queued, "the wake-up is on its way")
        var batch: [HTTPSubmission] = []
        _ = state.takePending(into: &batch)
        #expect(batch.count == 3)

        // The queue was taken while held: nothing left to wake for.
        state.holdWakeUps()
        let r6 = state.submit(try submission())
        #expect(r6 == .queued)
        batch.removeAll()
        _ = state.takePending(into: &batch)
        let r7 = state.releaseWakeUps()
        #expect(!r7)

        // Nothing submitted while held: no wake-up; an unmatched release stays at zero.
        state.holdWakeUps()
        let r8 = state.releaseWakeUps()
        #expect(!r8)
        let r9 = state.releaseWakeUps()
        #expect(!r9)
        #expect(state.holds == 0)
        let r10 = state.submit(try submission())
        #expect(r10 == .wakeUp)

        // The I/O thread's own submission (from a completion) is never held.
        batch.removeAll()
        _ = state.takePending(into: &batch)
        state.holdWakeUps()
        let r11 = state.submit(try submission(), holdable: false)
        #expect(r11 == .wakeUp)
        let r12 = state.releaseWakeUps()
        #expect(!r12)
    }

    @Test("a held wake-up is dropped when shutdown begins (the shutdown wakes the loop itself)")
    func heldThenShutdown() throws {
        var state = HTTPClientState()
        state.holdWakeUps()
        let r13 = state.submit(try submission())
        #expect(r13 == .queued)
        let began = state.beginShutdown(deadline: .now + .seconds(1))
        #expect(began)
        let r14 = state.releaseWakeUps()
        #expect(!r14)
    }

    @Test("after shutdown begins, submits are rejected and queued work is still handed over")
    func shutdownRejects() throws {
        var state = HTTPClientState()
        _ = state.submit(try submission())
        let deadline = ContinuousClock.now + .seconds(5)
        let began = state.beginShutdown(deadline: deadline)
        let later = state.beginShutdown(deadline: deadline + .seconds(1))
        let earlier = state.beginShutdown(deadline: deadline - .seconds(1))
        #expect(began)
        #expect(!later, "a later deadline changes nothing")
        #expect(earlier, "an earlier deadline wins")
        let rejected = state.submit(try submission())
        #expect(rejected == .reject)
        #expect(state.inFlight == 1)
        var batch: [HTTPSubmission] = []
        let phase = state.takePending(into: &batch)
        #expect(phase == .draining(deadline: deadline - .seconds(1)))
        #expect(batch.count == 1)
        let leftovers = state.stop()
        #expect(leftovers.isEmpty)
        #expect(state.phase == .stopped)
        let again = state.beginShutdown(deadline: deadline)
        #expect(!again)
        let afterStop = state.submit(try submission())
        #expect(afterStop == .reject)
    }
}

@Suite("CURLcode mapping and request validation")
struct CurlMappingTests {
    @Test("CURLcodes map to transport errors", arguments: [
        (28, HTTPTransportError.timeout),
        (7, .connect("d")), (6, .connect("d")),
        (60, .tls("d")), (35, .tls("d")), (77, .tls("d")),
        (16, .protocolError("d")), (92, .protocolError("d")), (52, .protocolError("d")), (56, .protocolError("d")),
        (1, .invalidRequest("d")), (3, .invalidRequest("d")),
        (43, .other(code: 43, message: "d")),
    ])
    func mapping(code: Int, expected: HTTPTransportError) {
        #expect(CurlErrorMapping.transportError(rawCode: code, detail: "d") == expected)
    }

    @Test("retryability", arguments: [
        (HTTPTransportError.timeout, true), (.connect("x"), true), (.protocolError("x"), true), (.shutdown, true),
        (.tls("x"), false), (.invalidRequest("x"), false), (.other(code: 43, message: "x"), false),
    ])
    func retryable(error: HTTPTransportError, expected: Bool) {
        #expect(error.isRetryable == expected)
    }

    @Test("durations become whole milliseconds, never 0", arguments: [
        (Duration.seconds(15), 15_000), (.milliseconds(300), 300), (.microseconds(1), 1), (.zero, 1), (.nanoseconds(1_500_000), 2),
        (.seconds(-5), 1), (.seconds(Int64.max), Int(Int32.max)), (.seconds(2_147_483), 2_147_483_000),
        (.seconds(2_147_484), Int(Int32.max)), (.seconds(-Int64.max), 1),
    ])
    func milliseconds(duration: Duration, expected: Int) {
        #expect(duration.wholeMilliseconds == expected)
    }

    @Test("curl HTTP versions map to 1, 2, 3")
    func versions() {
        #expect(CurlTransfer.httpVersion(curlValue: 2) == 1) // CURL_HTTP_VERSION_1_1
        #expect(CurlTransfer.httpVersion(curlValue: 3) == 2) // CURL_HTTP_VERSION_2_0
        #expect(CurlTransfer.httpVersion(curlValue: 30) == 3) // CURL_HTTP_VERSION_3
        #expect(CurlTransfer.httpVersion(curlValue: 0) == 0)
    }

    @Test("well-formed requests pass validation, including empty header values")
    func validRequest() throws {
        try HTTPRequestValidation.validate(HTTPRequest(method: "POST", url: "https://api.push.apple.com/3/device/abc", headers: [
            HTTPHeader(name: "apns-topic", value: "com.example.app"), HTTPHeader(name: "x-empty", value: ""),
        ]))
    }

    @Test("PEM detection")
    func pem() {
        #expect(CABundleBuilder.containsPEMCertificate(Array("x\n-----BEGIN CERTIFICATE-----\nMII".utf8)))
        #expect(!CABundleBuilder.containsPEMCertificate(Array("hello".utf8)))
        #expect(!CABundleBuilder.containsPEMCertificate([]))
    }

    @Test("response header lookup ignores case")
    func headerLookup() {
        let response = HTTPResponse(status: 200, headers: [HTTPHeader(name: "apns-id", value: "A")], body: [], httpVersion: 2, totalSeconds: 0)
        #expect(response.header("APNS-ID") == "A")
        #expect(response.header("retry-after") == nil)
    }
}

extension TransferSettings {
    /// Settings as a client with the default configuration has them (no CA bundle, no proxy).
    static func forTests(allowCleartextHTTP2: Bool = false) -> TransferSettings {
        TransferSettings(protocols: "https", allowCleartextHTTP2: allowCleartextHTTP2, connectTimeoutMS: 5_000, requestTimeoutMS: 10_000,
                         keepAliveSeconds: 30, keepAliveMS: 30_000, maxResponseBodyBytes: 1 << 20, proxy: "", noProxy: "",
                         resolveOverrides: [], caBundle: nil)
    }
}

@Suite("libcurl's header API")
struct CurlHeaderAPITests {
    @Test("the loaded libcurl keeps response headers for curl_easy_header (the client reads them only there)")
    func headerAPI() throws {
        #expect(CurlVersion.hasHeaderAPI())
        _ = try LibcurlCheck.validate(allowCleartextHTTP2: false)
    }
}
