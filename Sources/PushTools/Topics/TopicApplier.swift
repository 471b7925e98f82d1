import PushCore
import PushKafka

/// What `topics apply` needs from a cluster (the Kafka Admin API, or a fake in tests).
/// Blocking calls.
public protocol TopicCluster {
    /// The named topics that exist, with partitions, replication and configs.
    func existingTopics(_ names: [String]) throws(KafkaError) -> [String: ExistingTopic]
    /// Performs one changing action (`create`, `addPartitions`, `alterConfig`).
    func perform(_ action: TopicAction) throws(KafkaError)
}

/// ``TopicCluster`` over ``KafkaAdmin``.
public struct KafkaTopicCluster: TopicCluster {
    public let admin: KafkaAdmin
    public init(admin: KafkaAdmin) { self.admin = admin }

    public func existingTopics(_ names: [String]) throws(KafkaError) -> [String: ExistingTopic] {
        let metadata = try admin.metadata()
        let present = names.compactMap { metadata.topic($0) }
        let configs = try admin.describeTopicConfigs(present.map(\.name))
        var topics: [String: ExistingTopic] = [:]
        for topic in present {
            var overrides: [String: String] = [:]
            var effective: [String: String] = [:]
            for entry in configs[topic.name] ?? [] {
                guard let value = entry.value else { continue }
                effective[entry.name] = value
                if entry.isTopicOverride { overrides[entry.name] = value }
            }
            topics[topic.name] = ExistingTopic(name: topic.name, partitions: topic.partitions, replicationFactor: topic.replicationFactor,
                                               overrides: overrides, effective: effective)
        }
        return topics
    }

    public func perform(_ action: TopicAction) throws(KafkaError) {
        let results: [KafkaTopicOperationResult]
        switch action {
        case .create(let d):
            results = try admin.createTopics([KafkaNewTopic(name: d.name, partitions: d.partitions, replicationFactor: d.replicationFactor,
                                                            config: d.config.map { ($0.key, $0.value) })])
        case .addPartitions(let topic, _, let to):
            results = try admin.createPartitions([(topic: topic, totalCount: to)])
        case .alterConfig(let topic, _, let overrides):
            results = try admin.alterTopicConfigs([(topic: topic, config: overrides.map { ($0.key, $0.value) })])
        case .cannotShrinkPartitions, .replicationFactorDiffers:
            return
        }
        if let error = results.compactMap(\.error).first { throw error }
    }
}

/// Plans and applies: reads the cluster, plans, performs the changing actions in order.
public enum TopicApplier {
    /// A line per action (done or, with `dryRun`, to do) or a failure.
    public struct Outcome: Sendable {
        public var lines: [String]
        public var actions: [TopicAction]
        /// The action that failed and why; later actions were not attempted.
        public var failure: (action: TopicAction, error: KafkaError)?
    }

    public static func apply(_ declared: [TopicDeclaration], on cluster: some TopicCluster, dryRun: Bool) throws(KafkaError) -> Outcome {
        let existing = try cluster.existingTopics(declared.map(\.name))
        let actions = TopicPlan.make(declared: declared, existing: existing)
        var lines: [String] = []
        for action in actions {
            if action.isChange && !dryRun {
                do { try cluster.perform(action) } catch {
                    return Outcome(lines: lines, actions: actions, failure: (action, error))
                }
            }
            lines.append((dryRun && action.isChange ? "would " : "") + action.line)
        }
        if !actions.contains(where: \.isChange) { lines.append("no changes") }
        return Outcome(lines: lines, actions: actions, failure: nil)
    }
}
