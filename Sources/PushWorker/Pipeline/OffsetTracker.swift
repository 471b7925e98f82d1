import PushKafka
import Synchronization

/// At-least-once offsets (docs/pipeline.md): a partition's commit point never passes an unfinished
/// message. A message is finished when every recipient's final result (or its hand-off to the
/// retry topic, or the job's DLQ copy) was acknowledged by Kafka.
public final class OffsetTracker: Sendable {
    struct PartitionState {
        var pending: Set<Int64> = []
        var highestSeen: Int64 = -1
        var committed: Int64 = -1
        /// Which ownership of the partition this is: a partition revoked and assigned again
        /// starts a new one, so a processing of the old one finishing late cannot release the
        /// same offset of the new one (a redelivery in progress).
        var generation: Int
    }
    private struct State {
        var partitions: [TopicPartition: PartitionState] = [:]
        var nextGeneration = 1
    }
    private let state = Mutex(State())

    public init() {}

    /// Registers a polled message before any work on it starts; returns the ownership
    /// generation to hand back to ``finish(_:offset:generation:)``.
    @discardableResult
    public func begin(_ partition: TopicPartition, offset: Int64) -> Int {
        state.withLock { state in
            if state.partitions[partition] == nil {
                state.partitions[partition] = PartitionState(generation: state.nextGeneration)
                state.nextGeneration += 1
            }
            guard var current = state.partitions[partition] else { return 0 }
            current.pending.insert(offset)
            current.highestSeen = max(current.highestSeen, offset)
            state.partitions[partition] = current
            return current.generation
        }
    }

    /// The ownership generation of `partition` now (nil when not owned).
    public func generation(of partition: TopicPartition) -> Int? {
        state.withLock { $0.partitions[partition]?.generation }
    }

    /// Marks a message finished; ignored for a partition revoked meanwhile, or owned again since
    /// (`generation` from ``begin(_:offset:)``; nil: the current one).
    public func finish(_ partition: TopicPartition, offset: Int64, generation: Int? = nil) {
        state.withLock { state in
            guard let current = state.partitions[partition], generation.map({ $0 == current.generation }) ?? true else { return }
            state.partitions[partition]?.pending.remove(offset)
        }
    }

    /// Next offsets to commit (offset of the first unfinished message, or one past the highest
    /// seen), only where they moved since the last commit.
    public func committable() -> [TopicPartition: Int64] {
        state.withLock { state in
            var result: [TopicPartition: Int64] = [:]
            for (partition, state) in state.partitions where state.highestSeen >= 0 {
                let next = state.pending.min() ?? (state.highestSeen + 1)
                if next > state.committed { result[partition] = next }
            }
            return result
        }
    }

    public func markCommitted(_ offsets: [TopicPartition: Int64]) {
        state.withLock { state in
            for (partition, offset) in offsets {
                guard var current = state.partitions[partition] else { continue }
                current.committed = max(current.committed, offset)
                state.partitions[partition] = current
            }
        }
    }

    /// Forgets partitions this consumer no longer owns; their unfinished messages will be
    /// redelivered to the new owner (and de-duplicated by msgId there).
    public func revoke(_ revoked: [TopicPartition]) {
        state.withLock { state in for partition in revoked { state.partitions[partition] = nil } }
    }

    /// Messages begun and not finished, over all partitions.
    public var pendingCount: Int { state.withLock { $0.partitions.values.reduce(0) { $0 + $1.pending.count } } }
}
