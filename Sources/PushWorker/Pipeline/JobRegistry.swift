import PushKafka
import Synchronization

/// The processings this worker has begun and not finished, and the offsets they hold back.
///
/// A processing is registered when its message is processed and leaves when its last result (or
/// retry job) was acknowledged; only then is its offset released (``OffsetTracker``). Dead-letter
/// copies in flight count as unfinished messages too.
///
/// Thread safety: locks and atomics; any thread.
final class JobRegistry: Sendable {
    let offsets = OffsetTracker()
    private let active = Mutex<[ObjectIdentifier: JobRun]>([:])
    private let recipients = Atomic<Int>(0)
    private let deadLetters = Atomic<Int>(0)
    private let processings = Atomic<Int>(0)
    /// Unique per process: the prefix of every processing's claim owner.
    let ownerPrefix = String(UInt64.random(in: 1...UInt64.max), radix: 16)
    /// Woken when a processing finishes (the loop may wait for unfinished work to shrink).
    let room: RoomSignal

    init(room: RoomSignal) { self.room = room }

    /// A new processing's claim owner: unique in the fleet.
    func nextOwner() -> String { "\(ownerPrefix)-\(processings.add(1, ordering: .relaxed).newValue)" }

    func add(_ run: JobRun) {
        active.withLock { $0[ObjectIdentifier(run)] = run }
        recipients.add(run.recipientCount, ordering: .relaxed)
    }

    /// `run` finished: it leaves, and its offset is released.
    func finished(_ run: JobRun) {
        if active.withLock({ $0.removeValue(forKey: ObjectIdentifier(run)) != nil }) {
            recipients.subtract(run.recipientCount, ordering: .relaxed)
            room.signal()
        }
        offsets.finish(run.partition, offset: run.offset, generation: run.generation)
    }

    func deadLetterStarted() { deadLetters.add(1, ordering: .relaxed) }
    func deadLetterFinished() { deadLetters.subtract(1, ordering: .relaxed) }

    var runs: [JobRun] { active.withLock { Array($0.values) } }
    /// Processings not finished, plus dead-letter copies not acknowledged.
    var unfinishedMessages: Int { active.withLock { $0.count } + deadLetters.load(ordering: .relaxed) }
    /// Recipients of the unfinished processings.
    var unfinishedRecipients: Int { recipients.load(ordering: .relaxed) }
}

/// The worker's in-flight bound: recipients claimed for sending and not yet recorded
/// (`PUSHWORKER_MAX_IN_FLIGHT`), the bound of the duplicates a `kill -9` can cause.
final class InFlightSlots: Sendable {
    private let count = Atomic<Int>(0)
    /// Of `count`, the bulk lane's (docs/lanes.md).
    private let bulkCount = Atomic<Int>(0)
    let limit: Int
    /// The most bulk recipients in flight: (1 − `PUSHWORKER_TRANSACTIONAL_RESERVE`) × `limit`, at least 1.
    let bulkLimit: Int
    let room: RoomSignal

    init(limit: Int, reserve: Double = 0, room: RoomSignal) {
        self.limit = limit
        self.bulkLimit = max(1, Int((Double(limit) * (1 - min(max(reserve, 0), 1))).rounded(.down)))
        self.room = room
    }

    var current: Int { count.load(ordering: .relaxed) }
    var bulkCurrent: Int { bulkCount.load(ordering: .relaxed) }
    /// Slots bulk recipients may still take.
    var bulkRoom: Int { max(0, bulkLimit - bulkCurrent) }

    func take(_ taken: Int, bulk: Int = 0) {
        if taken > 0 { count.add(taken, ordering: .relaxed) }
        if bulk > 0 { bulkCount.add(bulk, ordering: .relaxed) }
    }

    /// Recorded outcomes give their slots back (`bulk` of them the bulk lane's).
    func release(_ released: Int, bulk: Int = 0) {
        if bulk > 0 { bulkCount.subtract(bulk, ordering: .relaxed) }
        if count.subtract(released, ordering: .relaxed).newValue < limit { room.signal() }
    }
}
