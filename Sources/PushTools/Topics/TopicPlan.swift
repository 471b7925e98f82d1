import PushCore

/// A topic as it exists on the cluster.
public struct ExistingTopic: Sendable, Equatable {
    public var name: String
    public var partitions: Int
    public var replicationFactor: Int
    /// Topic-level overrides (configs set on the topic itself): what AlterConfigs replaces.
    public var overrides: [String: String]
    /// Effective values of every described config (overrides, broker settings and defaults).
    public var effective: [String: String]

    public init(name: String, partitions: Int, replicationFactor: Int, overrides: [String: String] = [:], effective: [String: String]? = nil) {
        self.name = name; self.partitions = partitions; self.replicationFactor = replicationFactor
        self.overrides = overrides
        self.effective = effective ?? overrides
    }
}

/// One config value that `topics apply` changes.
public struct TopicConfigChange: Sendable, Equatable {
    public var key: String
    /// The effective value before (nil: not described by the broker).
    public var from: String?
    public var to: String
    public init(key: String, from: String?, to: String) { self.key = key; self.from = from; self.to = to }
}

/// What `topics apply` does for one topic, or reports without doing.
public enum TopicAction: Sendable, Equatable {
    /// Create the topic as declared.
    case create(TopicDeclaration)
    /// Raise the partition count (`CreatePartitions`).
    case addPartitions(topic: String, from: Int, to: Int)
    /// Set configs that differ. `overrides` is the complete set of topic-level overrides to
    /// write (AlterConfigs replaces them all): the existing ones with the declared values on top.
    case alterConfig(topic: String, changes: [TopicConfigChange], overrides: [KeyValue])
    /// Reported, not done: Kafka cannot remove partitions.
    case cannotShrinkPartitions(topic: String, declared: Int, existing: Int)
    /// Reported, not done: changing the replication factor is a partition reassignment.
    case replicationFactorDiffers(topic: String, declared: Int, existing: Int)

    /// Whether the action changes the cluster (notices do not).
    public var isChange: Bool {
        switch self {
        case .create, .addPartitions, .alterConfig: return true
        case .cannotShrinkPartitions, .replicationFactorDiffers: return false
        }
    }

    public var topic: String {
        switch self {
        case .create(let declaration): return declaration.name
        case .addPartitions(let topic, _, _), .alterConfig(let topic, _, _),
             .cannotShrinkPartitions(let topic, _, _), .replicationFactorDiffers(let topic, _, _): return topic
        }
    }

    /// One human line, e.g. `add-partitions push.jobs.v1 12 -> 24`.
    public var line: String {
        switch self {
        case .create(let d):
            let config = d.config.map { " \($0.key)=\($0.value)" }.joined()
            return "create \(d.name) partitions=\(d.partitions) replicationFactor=\(d.replicationFactor)\(config)"
        case .addPartitions(let topic, let from, let to):
            return "add-partitions \(topic) \(from) -> \(to)"
        case .alterConfig(let topic, let changes, _):
            return "alter-config \(topic) " + changes.map { "\($0.key): \($0.from ?? "<unset>") -> \($0.to)" }.joined(separator: ", ")
        case .cannotShrinkPartitions(let topic, let declared, let existing):
            return "keep \(topic): has \(existing) partitions, declared \(declared) (Kafka never removes partitions)"
        case .replicationFactorDiffers(let topic, let declared, let existing):
            return "keep \(topic): replication factor is \(existing), declared \(declared) (change it by partition reassignment)"
        }
    }
}

/// Declared topics vs the cluster → actions (pure: no I/O). Idempotent by construction: once
/// the actions are applied, planning again yields no change (notices may remain).
public enum TopicPlan {
    /// Actions in declared-topic order; for one topic: partitions first, then configs, then notices.
    public static func make(declared: [TopicDeclaration], existing: [String: ExistingTopic]) -> [TopicAction] {
        var actions: [TopicAction] = []
        for declaration in declared {
            guard let current = existing[declaration.name] else {
                actions.append(.create(declaration))
                continue
            }
            if declaration.partitions > current.partitions {
                actions.append(.addPartitions(topic: declaration.name, from: current.partitions, to: declaration.partitions))
            }
            var changes: [TopicConfigChange] = []
            for entry in declaration.config where current.effective[entry.key] != entry.value {
                changes.append(TopicConfigChange(key: entry.key, from: current.effective[entry.key], to: entry.value))
            }
            if !changes.isEmpty {
                var overrides = current.overrides
                for entry in declaration.config { overrides[entry.key] = entry.value }
                actions.append(.alterConfig(topic: declaration.name, changes: changes,
                                            overrides: overrides.sorted { $0.key < $1.key }.map { KeyValue($0.key, $0.value) }))
            }
            if declaration.partitions < current.partitions {
                actions.append(.cannotShrinkPartitions(topic: declaration.name, declared: declaration.partitions, existing: current.partitions))
            }
            if declaration.replicationFactor != current.replicationFactor {
                actions.append(.replicationFactorDiffers(topic: declaration.name, declared: declaration.replicationFactor,
                                                         existing: current.replicationFactor))
            }
        }
        return actions
    }
}
