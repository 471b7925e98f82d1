import PushKafka
import Synchronization

/// At-least-once offsets (DESIGN §1): a partition's commit point never passes an unfinished
/// message. A message is finished when every recipient's final result (or its hand-off to the
/// retry topic, or the job's DLQ copy) was acknowledged by Kafka.
public final class OffsetTracker: Sendable {
    struct PartitionState {
        var pending: Set<Int64> = []
        var highestSeen: Int64 = -1
        var committed: Int64 = -1
    }
    private let partitions = Mutex<[TopicPartition: PartitionState]>([:])

    public init() {}

    /// Registers a polled message before any work on it starts.
    public func begin(_ partition: TopicPartition, offset: Int64) {
        partitions.withLock { states in
            var state = states[partition, default: PartitionState()]
            state.pending.insert(offset)
            state.highestSeen = max(state.highestSeen, offset)
            states[partition] = state
        }
    }

    /// Marks a message finished (ignored for partitions revoked meanwhile).
    public func finish(_ partition: TopicPartition, offset: Int64) {
        partitions.withLock { states in
            _ = states[partition]?.pending.remove(offset)
        }
    }

    /// Next offsets to commit (offset of the first unfinished message, or one past the highest
    /// seen), only where they moved since the last commit.
    public func committable() -> [TopicPartition: Int64] {
        partitions.withLock { states in
            var result: [TopicPartition: Int64] = [:]
            for (partition, state) in states where state.highestSeen >= 0 {
                let next = state.pending.min() ?? (state.highestSeen + 1)
                if next > state.committed { result[partition] = next }
            }
            return result
        }
    }

    public func markCommitted(_ offsets: [TopicPartition: Int64]) {
        partitions.withLock { states in
            for (partition, offset) in offsets {
                guard var state = states[partition] else { continue }
                state.committed = max(state.committed, offset)
                states[partition] = state
            }
        }
    }

    /// Forgets partitions this consumer no longer owns; their unfinished messages will be
    /// redelivered to the new owner (and de-duplicated by msgId there).
    public func revoke(_ revoked: [TopicPartition]) {
        partitions.withLock { states in for partition in revoked { states[partition] = nil } }
    }

    /// Messages begun and not finished, over all partitions.
    public var pendingCount: Int { partitions.withLock { $0.values.reduce(0) { $0 + $1.pending.count } } }
}
