import PushPipeline
import Testing

/// docs/lanes.md: transactional candidates are taken before bulk ones, and bulk ones only within
/// their room (the rest of the slots is kept for transactional work).
@Suite("Admission with lanes")
struct LaneAdmissionTests {
    typealias Candidate = Admission.Candidate
    static let admission = Admission(maxInFlightPerEndpoint: 100, holdMaxSeconds: 30)

    @Test("transactional candidates queued behind bulk ones are taken first when room is short")
    func transactionalFirst() {
        let queue = [Candidate(due: 0, endpoint: 0), Candidate(due: 0, endpoint: 0), Candidate(due: 0, endpoint: 0, transactional: true)]
        let choices = Self.admission.choose(queue, room: 2, now: 1, inFlight: [], gates: [])
        #expect(choices == [.take, .keep, .take])
    }

    @Test("bulk candidates stop at their room; transactional ones may use every slot")
    func bulkBound() {
        let bulk = (0..<5).map { _ in Candidate(due: 0, endpoint: 0) }
        let transactional = (0..<3).map { _ in Candidate(due: 0, endpoint: 1, transactional: true) }
        let choices = Self.admission.choose(bulk + transactional, room: 6, bulkRoom: 2, now: 1, inFlight: [], gates: [])
        #expect(choices.filter { $0 == .take }.count == 5)
        #expect(Array(choices.prefix(5)) == [.take, .take, .keep, .keep, .keep])
        #expect(Array(choices.suffix(3)) == [.take, .take, .take])
        // No bulk room at all: only transactional work is taken.
        let none = Self.admission.choose(bulk + transactional, room: 6, bulkRoom: 0, now: 1, inFlight: [], gates: [])
        #expect(none == Array(repeating: .keep, count: 5) + Array(repeating: .take, count: 3))
    }

    @Test("a transactional candidate still respects its endpoint's gate, due time and cap")
    func transactionalKeepsRules() {
        let queue = [Candidate(due: 5, endpoint: 0, transactional: true), Candidate(due: 0, endpoint: 1, transactional: true),
                     Candidate(due: 0, endpoint: 2, transactional: true)]
        let gates: [Admission.Gate] = [.open, .held(until: 100), .open]
        let choices = Self.admission.choose(queue, room: 10, bulkRoom: 0, now: 1, inFlight: [0, 0, 100], gates: gates)
        #expect(choices == [.keep, .park(until: 100), .keep])
    }

    @Test("without transactional candidates the choice is the one-pass order of before")
    func bulkOnly() {
        let queue = (0..<4).map { Candidate(due: Double($0), endpoint: 0) }
        #expect(Self.admission.choose(queue, room: 10, now: 2, inFlight: [], gates: []) == [.take, .take, .take, .keep])
    }
}

@Suite("Admission with lanes: per-endpoint cap")
struct LaneEndpointCapTests {
    @Test("bulk candidates stop at (1 − reserve) of the endpoint cap; transactional ones may reach the whole cap")
    func endpointReserve() {
        let admission = Admission(maxInFlightPerEndpoint: 10, holdMaxSeconds: 30, transactionalReserve: 0.2)
        #expect(admission.bulkMaxInFlightPerEndpoint == 8)
        let queue = [Admission.Candidate(due: 0, endpoint: 0), Admission.Candidate(due: 0, endpoint: 0, transactional: true),
                     Admission.Candidate(due: 0, endpoint: 0, transactional: true), Admission.Candidate(due: 0, endpoint: 0, transactional: true)]
        // 7 bulk in flight: one more bulk fits (8), transactional ones up to 10.
        let choices = admission.choose(queue, room: 100, now: 1, inFlight: [7], gates: [])
        #expect(choices == [.keep, .take, .take, .take])
        let none = Admission(maxInFlightPerEndpoint: 10, holdMaxSeconds: 30)
        #expect(none.bulkMaxInFlightPerEndpoint == 10)
        #expect(Admission(maxInFlightPerEndpoint: 1, holdMaxSeconds: 30, transactionalReserve: 0.9).bulkMaxInFlightPerEndpoint == 1)
    }
}
