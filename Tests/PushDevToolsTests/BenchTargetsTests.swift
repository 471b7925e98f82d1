import Foundation
import Testing
@testable import PushDevTools

/// `bench e2e` grades its own report against its bounds (the tuned libcurl floor of the
/// same run) and the RSS bound; a bound whose ratio could not be measured is neither met nor
/// missed (null), so a run without references never reads as a pass.
@Suite("Bench targets")
struct BenchTargetsTests {
    @Test("each ratio against its bound: at the bound is met, above is not, unknown is null")
    func bounds() {
        let targets = BenchE2E.targets(workerToCurlFloor: 1.4, ioThreadToCurlFloor: 1.104, restToCurlFloor: 0.39,
                                       workerToH2load: 2.5, peakRSS: 90_000_000)
        #expect(targets["workerToCurlFloorMet"] as? Bool == true)
        #expect(targets["ioThreadToCurlFloorMet"] as? Bool == false, "1.104 is above 1.1 though it rounds to 1.10")
        #expect(targets["restToCurlFloorMet"] as? Bool == true)
        #expect(targets["cpuRatioMet"] as? Bool == false)
        #expect(targets["rssMet"] as? Bool == true)
        #expect(targets["maxWorkerToCurlFloor"] as? Double == 1.4 && targets["maxIOThreadToCurlFloor"] as? Double == 1.1
            && targets["maxRestToCurlFloor"] as? Double == 0.4)

        // `--h2load-requests 0`: no floor, no h2load; the ratios are null in the report.
        let unknown = BenchE2E.targets(workerToCurlFloor: nil, ioThreadToCurlFloor: nil, restToCurlFloor: nil,
                                       workerToH2load: nil, peakRSS: 0)
        for key in ["workerToCurlFloorMet", "ioThreadToCurlFloorMet", "restToCurlFloorMet", "cpuRatioMet"] {
            #expect(unknown[key] is NSNull, "\(key)")
        }
        #expect(unknown["rssMet"] as? Bool == false, "no RSS reading is not a pass")
        #expect(BenchE2E.targets(workerToCurlFloor: nil, ioThreadToCurlFloor: nil, restToCurlFloor: nil,
                                 workerToH2load: nil, peakRSS: 150_000_001)["rssMet"] as? Bool == false)
    }
}
