/// A job's lane (docs/lanes.md): which topic it travels on and which in-flight slots it may use.
/// Transactional work is claimed before bulk work and keeps a share of every worker's slots
/// (`PUSHWORKER_TRANSACTIONAL_RESERVE`); bulk is the default.
public enum JobLane: String, Sendable, CaseIterable {
    case transactional
    case bulk
}

/// The lanes whose job topics one worker consumes (`PUSHWORKER_LANES`, docs/lanes.md). The retry
/// topic is consumed by `both` and `bulk` workers (a dedicated transactional worker takes only
/// its own topic).
public enum LaneSelection: String, Sendable, CaseIterable {
    case both
    case transactional
    case bulk

    /// Whether the worker consumes `lane`'s job topic.
    public func consumes(_ lane: JobLane) -> Bool {
        switch self {
        case .both: true
        case .transactional: lane == .transactional
        case .bulk: lane == .bulk
        }
    }
}
