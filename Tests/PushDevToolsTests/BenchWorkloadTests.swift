import PushCore
import Testing
@testable import PushDevTools

/// The jobs `bench e2e` sends: valid jobs of the requested size, rich by default and lean
/// (`--lean-recipients`) for the memory worst case.
@Suite("Bench workload")
struct BenchWorkloadTests {
    static func workload(lean: Bool) -> BenchWorkload {
        BenchWorkload(appID: "app_bench", runID: "t", notifications: 300, jobSize: 300, mix: BenchWorkload.Mix(), deadShare: 0,
                      liveWeb: [#"{"endpoint":"https://127.0.0.1:1/w/1","keys":{"p256dh":"BNc","auth":"a"}}"#], deadWeb: [], lean: lean)
    }

    @Test("lean recipients carry only subscriptionId, platform and token or subscription, and take fewer bytes")
    func lean() throws {
        let rich = try JobDecoder.decode(Self.workload(lean: false).job(0).json)
        let leanJob = Self.workload(lean: true).job(0)
        let lean = try JobDecoder.decode(leanJob.json)
        #expect(lean.recipients.count == 300 && rich.recipients.count == 300)
        #expect(Set(lean.recipients.map(\.subscriptionID)).count == 300)
        #expect(lean.recipients.allSatisfy { $0.userID == nil && $0.language == nil && $0.properties.isEmpty })
        #expect(lean.recipients.allSatisfy { $0.token != nil || $0.subscription != nil })
        #expect(Set(lean.recipients.compactMap(\.platformName)) == Set(rich.recipients.compactMap(\.platformName)))
        #expect(leanJob.json.count < Self.workload(lean: false).job(0).json.count * 3 / 4)
    }
}
