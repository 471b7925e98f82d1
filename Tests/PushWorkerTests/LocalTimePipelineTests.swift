import Foundation
import PushCore
import PushEncoding
import PushTestSupport
import Testing
@testable import PushWorker

/// docs/local-time.md through the pipeline over fakes: quiet hours and local send times defer
/// recipients through the retry topic, due at their local time.
@Suite("Local-time delivery in the pipeline")
struct LocalTimePipelineTests {
    /// 2027-01-15T23:00:00Z.
    static let lateEvening = 1_800_000_000.0 + 15 * 3600

    static func recipients(_ zones: [String?]) -> String {
        zones.enumerated().map { n, zone in
            let token = String(repeating: "a", count: 56) + String(format: "%08x", n)
            let tz = zone.map { #","timezone":"\#($0)""# } ?? ""
            return #"{"userId":"u\#(n)","subscriptionId":"s\#(n)","platform":"ios","token":"\#(token)"\#(tz)}"#
        }.joined(separator: ",")
    }

    static func run(_ h: PipelineHarness, extra: String, zones: [String?]) {
        let json = #"{"schemaVersion":1,"jobId":"j1","appId":"app_a","campaignId":"cmp"\#(extra),"content":{"defaultLanguage":"en","languages":{"en":{"title":"Hi","body":"Sale"}}},"recipients":[\#(recipients(zones))]}"#
        let message = FakeMessages.message(offset: 1, value: json)
        h.registry.offsets.begin(message.topicPartition, offset: message.offset)
        h.intake.process(message)
    }

    static func retryJobs(_ h: PipelineHarness) throws -> [FanOutJob] {
        try h.sink.produced("retry").map { try JobDecoder.decode($0.value) }
    }

    @Test("quiet hours: inside them a recipient waits on the retry topic until their end in its zone; outside, it is sent; a bad zone is rejected")
    func quietHours() throws {
        let h = try PipelineHarness(clock: ManualClock(wall: Self.lateEvening), maxDeferSeconds: 86_400)
        // 23:00 UTC: UTC and Paris (00:00) are inside 22:00–08:00, Tokyo (08:00) is not, New York (18:00) is not.
        Self.run(h, extra: #","quietHours":{"start":"22:00","end":"08:00"}"#,
                 zones: [nil, "Europe/Paris", "Asia/Tokyo", "America/New_York", "Mars/Base"])
        h.round()
        #expect(h.transport.written.count == 2)
        h.transport.answer(FakeTransport.ok)
        h.flush()
        #expect(h.statuses().sorted() == ["rejected", "sent", "sent"])
        #expect(h.statuses("reason").contains("bad_timezone"))
        let retries = try Self.retryJobs(h).sorted { ($0.notBefore ?? .distantPast) < ($1.notBefore ?? .distantPast) }
        #expect(retries.count == 2, "one retry job per due time")
        // Paris: 08:00 CET = 07:00Z, 8 h ahead; UTC: 08:00Z, 9 h ahead.
        #expect(retries.map { Int($0.notBefore!.timeIntervalSince1970 - Self.lateEvening) } == [8 * 3600, 9 * 3600])
        #expect(retries.map { $0.recipients.map(\.subscriptionID) } == [["s1"], ["s0"]])
        #expect(retries.allSatisfy { $0.quietHours != nil }, "the retry job keeps its quiet hours")
    }

    @Test("sendAtLocal: each recipient is due at the next such time in its zone; the retry job waits for it no more")
    func sendAtLocal() throws {
        let h = try PipelineHarness(clock: ManualClock(wall: Self.lateEvening), maxDeferSeconds: 86_400)
        // 09:00 local: Tokyo is at 08:00 (1 h ahead), UTC at 23:00 (10 h), Sydney at 10:00 (23 h).
        Self.run(h, extra: #","sendAtLocal":"09:00""#, zones: ["Asia/Tokyo", nil, "Australia/Sydney"])
        h.round()
        h.flush()
        #expect(h.transport.written.isEmpty)
        let retries = try Self.retryJobs(h).sorted { ($0.notBefore ?? .distantPast) < ($1.notBefore ?? .distantPast) }
        #expect(retries.map { Int($0.notBefore!.timeIntervalSince1970 - Self.lateEvening) } == [3600, 10 * 3600, 23 * 3600])
        #expect(retries.allSatisfy { $0.sendAtLocal == nil })
    }

    @Test("a wait past the retry topic's longest delay hops: due at the bound, keeping sendAtLocal for the next look")
    func hop() throws {
        let h = try PipelineHarness(clock: ManualClock(wall: Self.lateEvening), maxDeferSeconds: 3540)
        Self.run(h, extra: #","sendAtLocal":"09:00""#, zones: [nil])
        h.round()
        h.flush()
        let retry = try #require(try Self.retryJobs(h).first)
        #expect(Int(retry.notBefore!.timeIntervalSince1970 - Self.lateEvening) == 3540)
        #expect(retry.sendAtLocal?.description == "09:00")
    }

    @Test("a local time after the job's expiresAt or sendBy ends the recipient expired with its reason")
    func expiresFirst() throws {
        let h = try PipelineHarness(clock: ManualClock(wall: Self.lateEvening), maxDeferSeconds: 86_400)
        let sendBy = RFC3339Timestamp.format(Date(timeIntervalSince1970: Self.lateEvening + 3600))
        Self.run(h, extra: #","quietHours":{"start":"22:00","end":"08:00"},"sendBy":"\#(sendBy)""#, zones: [nil])
        h.flush()
        #expect(h.statuses() == ["expired"])
        #expect(h.statuses("reason") == ["expired_in_quiet_hours"])
        let local = try PipelineHarness(clock: ManualClock(wall: Self.lateEvening), maxDeferSeconds: 86_400)
        Self.run(local, extra: #","sendAtLocal":"09:00","sendBy":"\#(sendBy)""#, zones: [nil])
        local.flush()
        #expect(local.statuses("reason") == ["expired_before_send_at_local"])
    }

    @Test("an app's default quiet hours apply to its bulk jobs only; transactional jobs ignore them unless they set their own")
    func appDefaults() throws {
        let defaults = ["app_a": QuietHours(start: ClockTime(parsing: "22:00")!, end: ClockTime(parsing: "08:00")!)!]
        let bulk = try PipelineHarness(clock: ManualClock(wall: Self.lateEvening), quietHours: defaults)
        Self.run(bulk, extra: "", zones: [nil])
        bulk.round()
        #expect(bulk.transport.written.isEmpty)
        let transactional = try PipelineHarness(clock: ManualClock(wall: Self.lateEvening), quietHours: defaults)
        Self.run(transactional, extra: #","lane":"transactional""#, zones: [nil])
        transactional.round()
        #expect(transactional.transport.written.count == 1)
        let explicit = try PipelineHarness(clock: ManualClock(wall: Self.lateEvening), quietHours: defaults)
        Self.run(explicit, extra: #","lane":"transactional","quietHours":{"start":"22:00","end":"08:00"}"#, zones: [nil])
        explicit.round()
        #expect(explicit.transport.written.isEmpty)
    }

    @Test("transactional recipients are claimed before bulk ones queued earlier, and bulk ones stop at their share of the slots")
    func lanesInTheClaimQueue() throws {
        let h = try PipelineHarness(maxInFlight: 10, perApp: 100)
        h.job(campaign: "bulk", count: 20)
        h.job(campaign: "otp", count: 2, first: 100, extra: #","lane":"transactional""#)
        h.round()
        #expect(h.transport.written.count == 10)
        #expect(h.writtenMsgIDs.count == 10)
        #expect(h.queue.transactionalCount == 0, "both transactional recipients were taken first")
    }
}
