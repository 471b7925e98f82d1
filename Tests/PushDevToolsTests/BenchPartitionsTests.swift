import Testing
@testable import PushDevTools

/// `bench e2e` sizes the in-process broker's topics for the run, and for several workers rounds
/// the count up to a multiple of theirs: the jobs go to the partitions in turn, so every worker
/// is assigned the same share (an A/B of two workers is only fair on equal loads).
@Suite("Bench partitions")
struct BenchPartitionsTests {
    @Test("one worker: sized for the run (4 at least); several: a multiple of the workers, never fewer")
    func rounding() {
        #expect(BenchE2E.autoPartitions(notifications: 30_000, jobSize: 500, workers: 1) == 5)
        #expect(BenchE2E.autoPartitions(notifications: 30_000, jobSize: 500, workers: 2) == 6)
        #expect(BenchE2E.autoPartitions(notifications: 100_000, jobSize: 500, workers: 2) == 16)
        #expect(BenchE2E.autoPartitions(notifications: 800, jobSize: 25, workers: 2) == 4)
        #expect(BenchE2E.autoPartitions(notifications: 800, jobSize: 25, workers: 3) == 6)
        for workers in 1...16 {
            for notifications in [1, 120, 30_000, 100_000, 1_000_000, 10_000_000] {
                let sized = BenchE2E.autoPartitions(notifications: notifications, jobSize: 500)
                let rounded = BenchE2E.autoPartitions(notifications: notifications, jobSize: 500, workers: workers)
                #expect(rounded % workers == 0 && rounded <= 512, "\(notifications) for \(workers): \(rounded)")
                #expect(rounded >= min(sized, 512 / workers * workers))
            }
        }
    }
}
