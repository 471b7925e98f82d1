import Foundation
import PushCore
@testable import PushTools
import Testing
@testable import PushWorker

/// A valid one-line job with `recipients` Android recipients `s0`, `s1`, ….
func enqueueTestJob(id: String, recipients: Int = 2) -> String {
    let list = (0..<recipients).map { #"{"userId":"u\#($0)","subscriptionId":"s\#($0)","platform":"android","token":"tok\#($0)"}"# }
    return #"{"schemaVersion":1,"jobId":"\#(id)","appId":"app_demo","campaignId":"cmp","content":{"defaultLanguage":"en","languages":{"en":{"body":"Hi"}}},"recipients":[\#(list.joined(separator: ","))]}"#
}

@Suite("enqueue input: one job or NDJSON; batches")
struct EnqueueInputTests {
    @Test("a pretty-printed job is one document starting on its first line")
    func singlePretty() {
        let text = "\n\n  {\n  \"a\": 1,\n  \"b\": \"x}{\"\n}\n"
        let documents = EnqueueInput.documents(Array(text.utf8))
        #expect(documents.count == 1)
        #expect(documents.first?.line == 3)
    }

    @Test("several values starting with { are NDJSON, numbered by line, blank lines skipped, CRLF accepted")
    func ndjson() {
        let text = "{\"a\":1}\r\n\n{\"b\":\"}\\\"{\"}\n   \n{\"c\":3}"
        let documents = EnqueueInput.documents(Array(text.utf8))
        #expect(documents.map(\.line) == [1, 3, 5])
        #expect(documents.map { String(decoding: $0.bytes, as: UTF8.self) } == ["{\"a\":1}", "{\"b\":\"}\\\"{\"}", "{\"c\":3}"])
    }

    @Test("input not starting with { is one document (the decoder explains)", arguments: ["[1,2]\n[3]", "42", "garbage\n{}"])
    func notObject(_ text: String) {
        #expect(EnqueueInput.documents(Array(text.utf8)).count == 1)
    }

    @Test("empty or blank input has no document", arguments: ["", " \n\t\n"])
    func empty(_ text: String) {
        #expect(EnqueueInput.documents(Array(text.utf8)).isEmpty)
    }

    @Test("a broken first line followed by more lines is NDJSON, so the error names line 1")
    func brokenFirstLine() {
        let text = "{\"a\": \"unterminated\n{\"b\":1}\n"
        #expect(EnqueueInput.documents(Array(text.utf8)).map(\.line) == [1, 2])
    }

    @Test("batch jobIds: zero-padded to 4 digits, wider past 10000 batches", arguments: [
        ("cmp", 0, 1, "cmp:0000"), ("cmp", 7, 12, "cmp:0007"), ("cmp", 9999, 10000, "cmp:9999"),
        ("cmp", 5, 10001, "cmp:00005"), ("a:b", 12, 100, "a:b:0012"),
    ])
    func batchIDs(_ base: String, _ index: Int, _ count: Int, _ expected: String) {
        #expect(JobBatcher.batchJobID(base, index: index, count: count) == expected)
    }

    @Test("batch counts", arguments: [(0, 3, 1), (1, 3, 1), (3, 3, 1), (4, 3, 2), (10, 3, 4), (10, 1, 10)])
    func batchCount(_ recipients: Int, _ size: Int, _ expected: Int) {
        #expect(JobBatcher.batchCount(recipients: recipients, size: size) == expected)
    }

    @Test("batches keep every other member and hold every recipient exactly once, in order")
    func batches() throws {
        let job = try JobDecoder.decode(Array(enqueueTestJob(id: "cmp_9", recipients: 7).utf8))
        let batches = JobBatcher.batches(job, size: 3)
        #expect(batches.map(\.jobID) == ["cmp_9:0000", "cmp_9:0001", "cmp_9:0002"])
        #expect(batches.map(\.recipients) == [3, 3, 1])
        var seen: [String] = []
        for batch in batches {
            let decoded = try JobDecoder.decode(batch.bytes)
            #expect(decoded.jobID == batch.jobID)
            #expect(decoded.campaignID == "cmp")
            #expect(decoded.content == job.content)
            seen += decoded.recipients.map(\.subscriptionID)
        }
        #expect(seen == (0..<7).map { "s\($0)" })
    }

    @Test("a job without recipients is one batch")
    func emptyJob() throws {
        let job = try JobDecoder.decode(Array(enqueueTestJob(id: "e", recipients: 0).utf8))
        let batches = JobBatcher.batches(job, size: 5)
        #expect(batches.map(\.jobID) == ["e:0000"])
        #expect(try JobDecoder.decode(batches[0].bytes).recipients.isEmpty)
    }

    @Test("an audience job (an FCM topic, docs/reference/job.md) is one batch, unchanged, counted as one recipient")
    func audienceJob() throws {
        let text = #"{"schemaVersion":1,"jobId":"t","appId":"app_demo","campaignId":"cmp","content":{"defaultLanguage":"en","languages":{"en":{"body":"Hi"}}},"audience":{"topic":"news"}}"#
        let job = try JobDecoder.decode(Array(text.utf8))
        let batches = JobBatcher.batches(job, size: 5)
        #expect(batches.map(\.jobID) == ["t"] && batches.map(\.recipients) == [1])
        #expect(try JobDecoder.decode(batches[0].bytes).audience == .topic("news"))
    }

    @Test("in-flight admission: count and byte limits, one record always allowed")
    func admission() {
        var state = Enqueuer.DeliveryState()
        var admitted = state.admits(100, maxCount: 2, maxBytes: 10)
        #expect(admitted)                                          // first one always
        admitted = state.admits(1, maxCount: 2, maxBytes: 10)
        #expect(!admitted)                                         // bytes exhausted
        state.inFlight = 0; state.inFlightBytes = 0
        admitted = state.admits(4, maxCount: 2, maxBytes: 10)
        #expect(admitted)
        admitted = state.admits(4, maxCount: 2, maxBytes: 10)
        #expect(admitted)
        admitted = state.admits(1, maxCount: 2, maxBytes: 10)
        #expect(!admitted)                                         // count exhausted
        #expect(state.inFlight == 2 && state.inFlightBytes == 8)
    }

    @Test("validation names the line and the JSON path of each invalid document")
    func validation() {
        let input = [enqueueTestJob(id: "a"), #"{"schemaVersion":1}"#, enqueueTestJob(id: "c"), #"{"schemaVersion":1,"jobId":"#].joined(separator: "\n")
        let enqueuer = Enqueuer(options: .init(topic: "t"))
        let result = enqueuer.validate(EnqueueInput.documents(Array(input.utf8)))
        #expect(result.valid.map(\.line) == [1, 3])
        #expect(result.recipients == 4)
        #expect(result.invalidCount == 2)
        #expect(result.errors == ["line 2: $.jobId: required", "line 2: $.appId: required", "line 2: $.campaignId: required",
                                  "line 2: $.content: required", "line 2: $.recipients: required", result.errors.last ?? ""])
        #expect(result.errors.last?.hasPrefix("line 4: $: invalid JSON") == true)
    }

    @Test("check: an invalid line fails with exit 65 and nothing to produce; --skip-invalid keeps the valid ones")
    func check() throws {
        let input = Array([enqueueTestJob(id: "a"), #"{"schemaVersion":2}"#].joined(separator: "\n").utf8)
        do {
            _ = try Enqueuer(options: .init(topic: "t")).check(input)
            Issue.record("expected a failure")
        } catch {
            #expect(error.exitCode == 65)
            #expect(error.messages.first == "line 2: $.schemaVersion: unsupported version 2, expected 1")
            #expect(error.messages.last?.hasPrefix("nothing produced") == true)
        }
        let checked = try Enqueuer(options: .init(topic: "t", skipInvalid: true)).check(input)
        #expect(checked.valid.count == 1)
        #expect(checked.errors.count == 1)
        #expect(checked.invalidCount == 1)
        #expect(throws: Enqueuer.Failure.self) { try Enqueuer(options: .init(topic: "t", skipInvalid: true)).check(Array(#"{"x":1}"#.utf8)) }
        #expect(throws: Enqueuer.Failure.self) { try Enqueuer(options: .init(topic: "t")).check([]) }
    }

    @Test("warnings are listed by line; --strict refuses them; relative dates are produced resolved")
    func warningsStrictAndRelativeDates() throws {
        let job = enqueueTestJob(id: "w")
        let edited = job.replacingOccurrences(of: "\"jobId\"", with: "\"expiresAt\":\"+4h\",\"tll\":5,\"jobId\"")
        let input = Array(edited.utf8)
        let checked = try Enqueuer(options: .init(topic: "t")).check(input)
        #expect(checked.warnings == ["line 1: warning: $.tll: unknown field (did you mean ttlSeconds?)"])
        let produced = try JobDecoder.decode(Array(try #require(checked.valid.first).bytes))
        let expiresAt = try #require(produced.expiresAt)
        #expect(abs(expiresAt.timeIntervalSinceNow - 4 * 3600) < 60)
        do {
            _ = try Enqueuer(options: .init(topic: "t", strict: true)).check(input)
            Issue.record("--strict accepted a warning")
        } catch {
            #expect(error.exitCode == 65)
            #expect(error.messages.first?.hasPrefix("line 1: $.tll: unknown field") == true)
            #expect(error.messages.first?.hasSuffix("(--strict)") == true)
        }
    }
}
