import PushCore
import PushKafka
@testable import PushTools
import Testing
@testable import PushWorker

private let jobs = TopicDeclaration(name: "push.jobs.v1", partitions: 24, replicationFactor: 3,
                                    config: [KeyValue("retention.ms", "604800000"), KeyValue("cleanup.policy", "delete")])

private func existing(partitions: Int = 24, replication: Int = 3, overrides: [String: String] = ["retention.ms": "604800000", "cleanup.policy": "delete"],
                      effective: [String: String]? = nil) -> [String: ExistingTopic] {
    ["push.jobs.v1": ExistingTopic(name: "push.jobs.v1", partitions: partitions, replicationFactor: replication, overrides: overrides, effective: effective)]
}

@Suite("Topic plan: declared vs existing → actions")
struct TopicsPlanTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var existing: [String: ExistingTopic]
        var expected: [TopicAction]
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "missing topic is created as declared", existing: [:], expected: [.create(jobs)]),
        Row(name: "identical topic: nothing", existing: existing(), expected: []),
        Row(name: "fewer partitions: add up to the declared count", existing: existing(partitions: 12),
            expected: [.addPartitions(topic: "push.jobs.v1", from: 12, to: 24)]),
        Row(name: "more partitions: reported, never shrunk", existing: existing(partitions: 48),
            expected: [.cannotShrinkPartitions(topic: "push.jobs.v1", declared: 24, existing: 48)]),
        Row(name: "replication differs: reported only", existing: existing(replication: 1),
            expected: [.replicationFactorDiffers(topic: "push.jobs.v1", declared: 3, existing: 1)]),
        Row(name: "config value differs: altered, other overrides kept",
            existing: existing(overrides: ["retention.ms": "86400000", "cleanup.policy": "delete", "segment.ms": "3600000"]),
            expected: [.alterConfig(topic: "push.jobs.v1",
                                    changes: [TopicConfigChange(key: "retention.ms", from: "86400000", to: "604800000")],
                                    overrides: [KeyValue("cleanup.policy", "delete"), KeyValue("retention.ms", "604800000"), KeyValue("segment.ms", "3600000")])]),
        Row(name: "config missing from overrides but equal by default: nothing",
            existing: existing(overrides: ["retention.ms": "604800000"], effective: ["retention.ms": "604800000", "cleanup.policy": "delete"]),
            expected: []),
        Row(name: "config not described at all: set", existing: existing(overrides: ["retention.ms": "604800000"]),
            expected: [.alterConfig(topic: "push.jobs.v1", changes: [TopicConfigChange(key: "cleanup.policy", from: nil, to: "delete")],
                                    overrides: [KeyValue("cleanup.policy", "delete"), KeyValue("retention.ms", "604800000")])]),
        Row(name: "everything differs: partitions, then config, then notices",
            existing: existing(partitions: 6, replication: 2, overrides: ["cleanup.policy": "compact", "retention.ms": "604800000"]),
            expected: [.addPartitions(topic: "push.jobs.v1", from: 6, to: 24),
                       .alterConfig(topic: "push.jobs.v1", changes: [TopicConfigChange(key: "cleanup.policy", from: "compact", to: "delete")],
                                    overrides: [KeyValue("cleanup.policy", "delete"), KeyValue("retention.ms", "604800000")]),
                       .replicationFactorDiffers(topic: "push.jobs.v1", declared: 3, existing: 2)]),
        Row(name: "shrink and config change together",
            existing: existing(partitions: 30, overrides: ["retention.ms": "1", "cleanup.policy": "delete"]),
            expected: [.alterConfig(topic: "push.jobs.v1", changes: [TopicConfigChange(key: "retention.ms", from: "1", to: "604800000")],
                                    overrides: [KeyValue("cleanup.policy", "delete"), KeyValue("retention.ms", "604800000")]),
                       .cannotShrinkPartitions(topic: "push.jobs.v1", declared: 24, existing: 30)]),
    ]

    @Test("one declared topic against each cluster state", arguments: rows)
    func plan(_ row: Row) {
        #expect(TopicPlan.make(declared: [jobs], existing: row.existing) == row.expected)
    }

    @Test("only changing actions count as changes")
    func changes() {
        #expect(TopicAction.create(jobs).isChange)
        #expect(TopicAction.addPartitions(topic: "t", from: 1, to: 2).isChange)
        #expect(TopicAction.alterConfig(topic: "t", changes: [], overrides: []).isChange)
        #expect(!TopicAction.cannotShrinkPartitions(topic: "t", declared: 1, existing: 2).isChange)
        #expect(!TopicAction.replicationFactorDiffers(topic: "t", declared: 1, existing: 2).isChange)
    }

    @Test("several topics: actions follow declaration order, existing ones untouched")
    func severalTopics() {
        let retry = TopicDeclaration(name: "push.retry.v1", partitions: 4, replicationFactor: 1)
        let actions = TopicPlan.make(declared: [jobs, retry], existing: existing())
        #expect(actions == [.create(retry)])
    }

    @Test("lines name topic and values")
    func lines() {
        #expect(TopicAction.addPartitions(topic: "push.jobs.v1", from: 12, to: 24).line == "add-partitions push.jobs.v1 12 -> 24")
        #expect(TopicAction.create(jobs).line == "create push.jobs.v1 partitions=24 replicationFactor=3 retention.ms=604800000 cleanup.policy=delete")
        #expect(TopicAction.alterConfig(topic: "t", changes: [TopicConfigChange(key: "a", from: nil, to: "1")], overrides: []).line
                == "alter-config t a: <unset> -> 1")
        #expect(TopicAction.cannotShrinkPartitions(topic: "t", declared: 2, existing: 3).line.contains("never removes partitions"))
    }
}

/// An in-memory cluster with the Admin API semantics `topics apply` relies on.
final class FakeTopicCluster: TopicCluster, @unchecked Sendable {
    // Thread safety: used by one test on one thread.
    var topics: [String: ExistingTopic] = [:]
    var performed: [TopicAction] = []
    var refuse: KafkaError?

    func existingTopics(_ names: [String]) throws(KafkaError) -> [String: ExistingTopic] {
        topics.filter { names.contains($0.key) }
    }

    func perform(_ action: TopicAction) throws(KafkaError) {
        if let refuse { throw refuse }
        performed.append(action)
        switch action {
        case .create(let d):
            let overrides = Dictionary(d.config.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
            topics[d.name] = ExistingTopic(name: d.name, partitions: d.partitions, replicationFactor: d.replicationFactor, overrides: overrides)
        case .addPartitions(let topic, _, let to): topics[topic]?.partitions = to
        case .alterConfig(let topic, _, let overrides):
            let values = Dictionary(overrides.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
            topics[topic]?.overrides = values
            topics[topic]?.effective = values
        case .cannotShrinkPartitions, .replicationFactorDiffers: break
        }
    }
}

@Suite("Topic apply (planner + executor on a fake cluster)")
struct TopicsApplyTests {
    @Test("first run creates, second run says no changes")
    func idempotent() throws {
        let cluster = FakeTopicCluster()
        let retry = TopicDeclaration(name: "push.retry.v1", partitions: 4, replicationFactor: 1, config: [KeyValue("retention.ms", "1")])
        let first = try TopicApplier.apply([jobs, retry], on: cluster, dryRun: false)
        #expect(first.failure == nil)
        #expect(first.lines.count == 2)
        #expect(first.lines.allSatisfy { $0.hasPrefix("create ") })
        let second = try TopicApplier.apply([jobs, retry], on: cluster, dryRun: false)
        #expect(second.lines == ["no changes"])
        #expect(cluster.performed.count == 2)
    }

    @Test("dry run changes nothing and says would")
    func dryRun() throws {
        let cluster = FakeTopicCluster()
        cluster.topics = existing(partitions: 12)
        let outcome = try TopicApplier.apply([jobs], on: cluster, dryRun: true)
        #expect(outcome.lines == ["would add-partitions push.jobs.v1 12 -> 24"])
        #expect(cluster.performed.isEmpty)
        #expect(cluster.topics["push.jobs.v1"]?.partitions == 12)
    }

    @Test("notices alone still report no changes")
    func noticesOnly() throws {
        let cluster = FakeTopicCluster()
        cluster.topics = existing(partitions: 48)
        let outcome = try TopicApplier.apply([jobs], on: cluster, dryRun: false)
        #expect(outcome.lines.count == 2)
        #expect(outcome.lines.last == "no changes")
    }

    @Test("a refused action stops the run and names it")
    func refused() throws {
        let cluster = FakeTopicCluster()
        cluster.refuse = KafkaError(code: KafkaError.unsupportedFeature, message: "nope")
        let outcome = try TopicApplier.apply([jobs], on: cluster, dryRun: false)
        #expect(outcome.failure?.action == .create(jobs))
        #expect(outcome.failure?.error.code == KafkaError.unsupportedFeature)
        #expect(outcome.lines.isEmpty)
    }
}
