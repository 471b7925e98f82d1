import Foundation
import Synchronization
@testable import PushHTTP
import PushTestSupport
import Testing

/// A transfer as the deadlines see it: live while it holds the entry's ticket.
private final class Transfer {
    let name: String
    var ticket: UInt64
    init(_ name: String, ticket: UInt64) {
        self.name = name
        self.ticket = ticket
    }
}

private func isLive(_ transfer: Transfer, _ ticket: UInt64) -> Bool { transfer.ticket == ticket }

private func next(_ deadlines: inout TransferDeadlines<Transfer>, at nowMS: Int64) -> Int64? {
    deadlines.millisecondsUntilNext(nowMS: nowMS, isLive: isLive)
}

private func add(_ deadlines: inout TransferDeadlines<Transfer>, _ transfer: Transfer, at nowMS: Int64, timeoutMS: Int) -> Bool {
    deadlines.add(transfer, ticket: transfer.ticket, nowMS: nowMS, timeoutMS: timeoutMS)
}

private func takeDue(_ deadlines: inout TransferDeadlines<Transfer>, at nowMS: Int64) -> [String] {
    var due: [(item: Transfer, kind: TransferDeadlines<Transfer>.Kind)] = []
    deadlines.takeDue(nowMS: nowMS, isLive: isLive, into: &due)
    return due.map { "\($0.item.name):\($0.kind == .connect ? "connect" : "request")" }
}

@Suite("TransferDeadlines: request and connect deadlines kept by the I/O loop")
struct TransferDeadlinesTests {
    @Test("a request deadline comes due at start + timeout, not a millisecond before, in start order")
    func requestDeadlines() {
        var deadlines = TransferDeadlines<Transfer>(connectTimeoutMS: 0)
        let a = Transfer("a", ticket: 1), b = Transfer("b", ticket: 2)
        #expect(add(&deadlines, a, at: 1000, timeoutMS: 300))
        #expect(add(&deadlines, b, at: 1010, timeoutMS: 300))
        #expect(next(&deadlines, at: 1000) == 300)
        #expect(takeDue(&deadlines, at: 1299).isEmpty)
        #expect(takeDue(&deadlines, at: 1300) == ["a:request"])
        #expect(next(&deadlines, at: 1300) == 10)
        #expect(takeDue(&deadlines, at: 5000) == ["b:request"])
        #expect(next(&deadlines, at: 5000) == nil)
        #expect(deadlines.count == 0)
    }

    @Test("a finished transfer's entries never come due and leave once they reach the front")
    func staleEntries() {
        var deadlines = TransferDeadlines<Transfer>(connectTimeoutMS: 100)
        let a = Transfer("a", ticket: 1), b = Transfer("b", ticket: 2)
        _ = deadlines.add(a, ticket: 1, nowMS: 0, timeoutMS: 1000)
        _ = deadlines.add(b, ticket: 2, nowMS: 5, timeoutMS: 1000)
        #expect(deadlines.count == 4)
        a.ticket = 0 // finished
        // The next deadline is b's connect deadline; a's entries are dropped on the way.
        #expect(next(&deadlines, at: 0) == 105)
        #expect(deadlines.count == 2)
        // A reused transfer object under a new ticket does not revive its old entries.
        b.ticket = 7
        #expect(takeDue(&deadlines, at: 10_000).isEmpty)
        #expect(deadlines.count == 0)
    }

    @Test("a connect deadline is recorded only when it comes before the request deadline")
    func connectBeforeRequest() {
        var deadlines = TransferDeadlines<Transfer>(connectTimeoutMS: 500)
        let short = Transfer("short", ticket: 1), long = Transfer("long", ticket: 2), none = Transfer("none", ticket: 3)
        _ = deadlines.add(short, ticket: 1, nowMS: 0, timeoutMS: 400)
        _ = deadlines.add(long, ticket: 2, nowMS: 0, timeoutMS: 2000)
        _ = deadlines.add(none, ticket: 3, nowMS: 0, timeoutMS: 0)
        #expect(deadlines.count == 4) // short: request; long: connect + request; none: connect
        #expect(takeDue(&deadlines, at: 400) == ["short:request"])
        #expect(takeDue(&deadlines, at: 500) == ["long:connect", "none:connect"])
        #expect(takeDue(&deadlines, at: 1999).isEmpty)
        #expect(takeDue(&deadlines, at: 2000) == ["long:request"])
    }

    @Test("each request timeout keeps its own order; the earliest of all queues is the next wake-up")
    func severalTimeouts() {
        var deadlines = TransferDeadlines<Transfer>(connectTimeoutMS: 0)
        let slow = Transfer("slow", ticket: 1), fast = Transfer("fast", ticket: 2)
        _ = deadlines.add(slow, ticket: 1, nowMS: 0, timeoutMS: 10_000)
        _ = deadlines.add(fast, ticket: 2, nowMS: 50, timeoutMS: 100)
        #expect(next(&deadlines, at: 60) == 90)
        #expect(next(&deadlines, at: 500) == 0)
        #expect(takeDue(&deadlines, at: 500) == ["fast:request"])
        #expect(next(&deadlines, at: 500) == 9500)
    }

    @Test("more distinct request timeouts than queues: the extra one is left to libcurl, its connect deadline kept")
    func tooManyTimeouts() {
        var deadlines = TransferDeadlines<Transfer>(connectTimeoutMS: 50)
        var transfers: [Transfer] = []
        for index in 0..<TransferDeadlines<Transfer>.maxRequestQueues {
            let transfer = Transfer("t\(index)", ticket: UInt64(index + 1))
            transfers.append(transfer)
            #expect(add(&deadlines, transfer, at: 0, timeoutMS: 100 + index))
        }
        let extra = Transfer("extra", ticket: 99)
        #expect(!add(&deadlines, extra, at: 0, timeoutMS: 999))
        // A timeout that already has a queue is still taken.
        let again = Transfer("again", ticket: 100)
        #expect(add(&deadlines, again, at: 0, timeoutMS: 100))
        #expect(takeDue(&deadlines, at: 50).contains("extra:connect"))
        #expect(!takeDue(&deadlines, at: 10_000).contains { $0.hasPrefix("extra") })
    }

    @Test("thousands of finished entries are dropped and the queues compacted")
    func manyStale() {
        var deadlines = TransferDeadlines<Transfer>(connectTimeoutMS: 5000)
        let live = Transfer("live", ticket: 1)
        _ = deadlines.add(live, ticket: 1, nowMS: 0, timeoutMS: 15_000)
        var finished: [Transfer] = []
        for ticket in 2..<5002 {
            let transfer = Transfer("f", ticket: UInt64(ticket))
            _ = deadlines.add(transfer, ticket: UInt64(ticket), nowMS: Int64(ticket), timeoutMS: 15_000)
            transfer.ticket = 0
            finished.append(transfer)
        }
        // The live transfer at the front holds the finished ones behind it.
        #expect(deadlines.count == 2 * 5001)
        live.ticket = 0
        #expect(next(&deadlines, at: 0) == nil)
        #expect(deadlines.count == 0)
        #expect(finished.count == 5000)
    }
}

/// Submits `requests` at once and waits (≤ 30 s) for every completion; each completion's time
/// since the submit is read on the I/O thread, so a busy cooperative pool (the full suite) cannot
/// stretch it.
private func timedSends(_ client: HTTP2Client, _ requests: [HTTPRequest]) -> [(result: Result<HTTPResponse, HTTPTransportError>, seconds: Double)?] {
    let answers = Mutex<[(result: Result<HTTPResponse, HTTPTransportError>, seconds: Double)?]>(Array(repeating: nil, count: requests.count))
    let group = DispatchGroup()
    let start = ContinuousClock.now
    for (index, request) in requests.enumerated() {
        group.enter()
        client.submit(request) { result in
            let took = elapsed(since: start)
            answers.withLock { $0[index] = (result, took) }
            group.leave()
        }
    }
    _ = group.wait(timeout: .now() + 30)
    return answers.withLock { $0 }
}

@Suite("HTTP2Client timeouts, kept by the I/O loop", .serialized)
struct LoopTimeoutTests {
    @Test("a TLS handshake that never finishes ends in .timeout at the connect timeout, not the request timeout")
    func connectTimeout() throws {
        let silent = try SilentListener()
        let client = try HTTP2Client(configuration: configuration(caFile: nil) { $0.connectTimeout = .milliseconds(300) })
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        let answer = try #require(timedSends(client, [HTTPRequest(url: "https://127.0.0.1:\(silent.port)/", timeout: .seconds(20))])[0])
        #expect(answer.result.failure == .timeout)
        #expect(answer.seconds >= 0.28 && answer.seconds < 3, "took \(answer.seconds) s")
        #expect(client.inFlight == 0)
    }

    @Test("an answer slower than the connect timeout on an established connection still arrives")
    func slowAnswerPastConnectDeadline() throws {
        let server = try NghttpdServer()
        let proxy = try ConnectProxy()
        let client = try HTTP2Client(configuration: configuration(caFile: server.caFile) {
            $0.proxy = proxy.url
            $0.connectTimeout = .milliseconds(300)
        })
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        let warm = try #require(timedSends(client, [HTTPRequest(url: server.origin + "/hello.txt")])[0])
        #expect(try warm.result.get().status == 200)
        proxy.delayAnswers(milliseconds: 800)
        let slow = try #require(timedSends(client, [HTTPRequest(url: server.origin + "/hello.txt", timeout: .seconds(10))])[0])
        let response = try slow.result.get()
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == NghttpdServer.helloBody)
        #expect(slow.seconds >= 0.75, "took \(slow.seconds) s: the answer was held 0.8 s")
        #expect(proxy.connects.count == 1, "one tunnel, reused")
    }

    @Test("a slow answer on an established connection ends unanswered at the request timeout; the client goes on")
    func requestTimeoutOnOpenConnection() throws {
        let server = try NghttpdServer()
        let proxy = try ConnectProxy()
        let client = try HTTP2Client(configuration: configuration(caFile: server.caFile) { $0.proxy = proxy.url })
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        let warm = try #require(timedSends(client, [HTTPRequest(url: server.origin + "/hello.txt")])[0])
        #expect(try warm.result.get().status == 200)
        proxy.delayAnswers(milliseconds: 1500)
        let slow = try #require(timedSends(client, [HTTPRequest(url: server.origin + "/hello.txt", timeout: .milliseconds(400))])[0])
        // Written, not answered: the server may have acted on it.
        guard case .unanswered(.timeout, _) = slow.result.failure else {
            Issue.record("expected .unanswered(.timeout, _), got \(slow.result)")
            return
        }
        #expect(slow.seconds >= 0.38 && slow.seconds < 1.4, "took \(slow.seconds) s")
        proxy.delayAnswers(milliseconds: 0)
        let after = try #require(timedSends(client, [HTTPRequest(url: server.origin + "/hello.txt", timeout: .seconds(10))])[0])
        let response = try after.result.get()
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == NghttpdServer.helloBody)
        #expect(client.inFlight == 0)
    }

    @Test("requests with more distinct timeouts than the loop keeps each still end at their own timeout")
    func manyDistinctTimeouts() throws {
        let silent = try SilentListener()
        let client = try HTTP2Client(configuration: configuration(caFile: nil) { $0.connectTimeout = .seconds(30) })
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        let timeouts = (0..<(TransferDeadlines<AnyObject>.maxRequestQueues + 3)).map { 300 + 100 * $0 }
        let answers = timedSends(client, timeouts.map { HTTPRequest(url: "https://127.0.0.1:\(silent.port)/\($0)", timeout: .milliseconds($0)) })
        for (timeout, answer) in zip(timeouts, answers) {
            guard let answer else {
                Issue.record("timeout \(timeout) ms: no completion within 30 s")
                continue
            }
            #expect(answer.result.failure == .timeout, "timeout \(timeout) ms: \(answer.result)")
            let seconds = Double(timeout) / 1000
            #expect(answer.seconds >= seconds - 0.02 && answer.seconds < seconds + 2, "timeout \(timeout) ms took \(answer.seconds) s")
        }
    }
}
