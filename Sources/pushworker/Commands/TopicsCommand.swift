import Foundation
import PushRuntime
import PushCLI
import PushCore
import PushKafka
import PushWorker
import PushTools
import PushEncoding

/// `pushworker topics print|apply` (docs/reference/topics.md, cli.md): shows the declared topics, or converges the
/// cluster to them with the Kafka Admin API.
enum TopicsCommand {
    static let usage = """
    usage: pushworker topics print [--dir D] [--json]
           pushworker topics apply [--dir D] [--dry-run] [--replication-factor N] [--timeout SECONDS] [--verbose]

    The declared topics are the topics/*.json files of --dir, else ./topics, else
    /usr/share/pushworker/topics, else the declarations built into this binary (so both
    commands work from any directory; stderr names the source).

    print   a table of the declared topics under the names this configuration uses
            (PUSHWORKER_TOPIC_* replace the default names; SETTING names the variable,
            DECLARED the default name when it differs). --json: a JSON array of the
            declarations with "name" the configured name, plus "setting" and "declaredName".
    apply   compares them with the cluster at PUSHWORKER_KAFKA_BROKERS (librdkafka properties via
            PUSHWORKER_RDKAFKA_*) and creates missing topics, adds partitions where the declared
            count is higher, and sets configs that differ (keeping other topic-level overrides).
            It never removes partitions nor changes a replication factor: it reports them
            ("keep ..."). Default topic names are mapped to PUSHWORKER_TOPIC_* when set.
            One line per action, "no changes" when there is nothing to do; idempotent.
      --dry-run               print what would be done, change nothing
      --replication-factor N  create topics with N replicas instead of the declared count
                              (a one- or two-broker development cluster)
      --timeout SECONDS       per Admin API request (default 15)
      --verbose               show librdkafka's warnings and errors

    Exit 0 on success, 64 usage, 66 unreadable declarations, 69 the cluster refused or did not
    answer (librdkafka's mock cluster, `pushworker-dev dev-broker`, has no Admin API), 78 configuration.
    """

    static func main(_ arguments: [String]) -> Int32 {
        var code: Int32 = 0
        guard let parsed = CommandSupport.parse(arguments, usage: usage, values: ["dir", "replication-factor", "timeout"],
                                                flags: ["json", "dry-run", "verbose"], exitCode: &code) else { return code }
        CommandSupport.quietKafkaLogs(unless: parsed.flag("verbose"))
        guard let verb = parsed.positionals.first, parsed.positionals.count == 1 else {
            guard let verb = parsed.positionals.first else { return CommandSupport.usageError("expected print or apply", usage: usage) }
            if ["print", "apply"].contains(verb) { return CommandSupport.usageError("\(verb) takes no argument", usage: usage) }
            return CommandSupport.unknownSubcommand(verb, among: ["print", "apply"], usage: usage)
        }
        guard ["print", "apply"].contains(verb) else { return CommandSupport.unknownSubcommand(verb, among: ["print", "apply"], usage: usage) }
        let source = TopicDeclarations.source(parsed.value("dir"))
        let declared: [TopicDeclaration]
        do { declared = try TopicDeclarations.load(source) } catch {
            printError("error: \(error)")
            return ExitCode.noInput
        }
        printError("topics: declarations from \(source)")
        switch verb {
        case "print":
            if parsed.flag("dry-run") || parsed.value("replication-factor") != nil || parsed.value("timeout") != nil {
                return CommandSupport.usageError("print takes only --dir and --json", usage: usage)
            }
            let names = configuredNames()
            if let problem = names.problem { printError("warning: \(problem)") }
            let topics = named(declared, names.names)
            if parsed.flag("json") {
                CommandSupport.writeLine(json(topics))
            } else {
                for line in table(topics) { CommandSupport.writeLine(line) }
            }
            return ExitCode.ok
        case "apply":
            if parsed.flag("json") { return CommandSupport.usageError("apply has no --json", usage: usage) }
            guard let limits = CommandSupport.usageChecked(usage, {
                (replication: parsed.value("replication-factor") == nil ? nil : try parsed.integer("replication-factor", default: 1, in: 1...32),
                 timeout: try parsed.integer("timeout", default: 15, in: 1...3600))
            }) else { return ExitCode.usage }
            return apply(declared, dryRun: parsed.flag("dry-run"), replication: limits.replication, timeout: .seconds(limits.timeout))
        default:
            return CommandSupport.unknownSubcommand(verb, among: ["print", "apply"], usage: usage)
        }
    }

    static func apply(_ declared: [TopicDeclaration], dryRun: Bool, replication: Int?, timeout: Duration) -> Int32 {
        guard let configuration = CommandSupport.configuration(.enqueue) else { return ExitCode.config }
        let topics = mapped(declared, configuration: configuration, replication: replication)
        let admin: KafkaAdmin
        do { admin = try KafkaAdmin(properties: configuration.kafkaProperties(for: .producer), timeout: timeout) } catch {
            printError("error: \(error.message)")
            return ExitCode.config
        }
        defer { admin.close() }
        let outcome: TopicApplier.Outcome
        do { outcome = try TopicApplier.apply(topics, on: KafkaTopicCluster(admin: admin), dryRun: dryRun) } catch {
            printError("error: cannot read the topics of \(configuration.kafkaBrokers): \(explain(error))")
            return ExitCode.unavailable
        }
        for line in outcome.lines { CommandSupport.writeLine(line) }
        if let failure = outcome.failure {
            printError("error: \(failure.action.line): \(explain(failure.error))")
            return ExitCode.unavailable
        }
        return ExitCode.ok
    }

    /// The `PUSHWORKER_TOPIC_*` settings by the default name they replace (`push.jobs.v1` →
    /// `PUSHWORKER_TOPIC_JOBS`), from the configuration's variable table.
    static let settings: [String: String] = Dictionary(
        Configuration.variables.filter { $0.name.hasPrefix("PUSHWORKER_TOPIC_") }.compactMap { variable in
            variable.defaultValue.map { ($0, variable.name) }
        }, uniquingKeysWith: { first, _ in first })

    /// The configured names by default name.
    static func names(_ configuration: Configuration) -> [String: String] {
        ["push.jobs.v1": configuration.topicJobs, "push.jobs.transactional.v1": configuration.topicJobsTransactional,
         "push.retry.v1": configuration.topicRetry,
         "push.results.v1": configuration.topicResults, "push.tokens.v1": configuration.topicTokens,
         "push.dlq.v1": configuration.topicDLQ, "push.events.v1": configuration.topicEvents]
    }

    /// The names the configuration uses (`print` needs no broker, key or folder): the whole
    /// configuration when it loads, else the `PUSHWORKER_TOPIC_*` variables alone (with the
    /// problem, for a warning).
    static func configuredNames(environment: [String: String] = ProcessInfo.processInfo.environment) -> (names: [String: String], problem: String?) {
        var overrides: [String: String] = [:]
        if (environment["PUSHWORKER_MSGID_KEYS"] ?? "").isEmpty { overrides["PUSHWORKER_MSGID_KEYS"] = CommandSupport.ephemeralKeySpecification() }
        do {
            return (names(try Configuration.load(environment: environment, overrides: overrides, purpose: .render)), nil)
        } catch {
            var names: [String: String] = [:]
            for (declared, setting) in settings {
                if let value = environment[setting]?.trimmingCharacters(in: .whitespaces), !value.isEmpty { names[declared] = value }
            }
            return (names, "the configuration has problems (`pushworker config check`): topic names from the environment alone")
        }
    }

    /// A declared topic under its configured name.
    struct NamedTopic {
        var declaration: TopicDeclaration
        /// The default name in topics/ when the configuration renames it.
        var declaredName: String?
        /// The variable that names it (`PUSHWORKER_TOPIC_JOBS`), if any.
        var setting: String?
    }

    static func named(_ declared: [TopicDeclaration], _ names: [String: String]) -> [NamedTopic] {
        declared.map { declaration in
            var topic = declaration
            var declaredName: String?
            if let name = names[declaration.name], name != declaration.name {
                topic.name = name
                declaredName = declaration.name
            }
            return NamedTopic(declaration: topic, declaredName: declaredName, setting: settings[declaration.name])
        }
    }

    /// Declarations with default names replaced by the configured `PUSHWORKER_TOPIC_*` names.
    static func mapped(_ declared: [TopicDeclaration], configuration: Configuration, replication: Int?) -> [TopicDeclaration] {
        named(declared, names(configuration)).map { named in
            var topic = named.declaration
            if let replication { topic.replicationFactor = replication }
            return topic
        }
    }

    /// The error with a hint for the usual causes.
    static func explain(_ error: KafkaError) -> String {
        var text = "\(error.message) [\(error.name)]"
        if error.code == KafkaError.unsupportedFeature {
            text += " (the broker does not implement this Admin API; librdkafka's mock cluster, `pushworker-dev dev-broker`, has none)"
        } else if error.code == KafkaError.timedOut || error.code == KafkaError.allBrokersDown || error.code == KafkaError.transport {
            text += " (no answer: check PUSHWORKER_KAFKA_BROKERS; a cluster without a controller, such as librdkafka's mock cluster, has no Admin API)"
        }
        return text
    }

    static func table(_ topics: [NamedTopic]) -> [String] {
        var rows = [["TOPIC", "PARTITIONS", "RF", "RETENTION", "CLEANUP", "KEY", "SETTING", "DECLARED"]]
        for topic in topics {
            let d = topic.declaration
            rows.append([d.name, "\(d.partitions)", "\(d.replicationFactor)", retention(d.configValue("retention.ms")),
                         d.configValue("cleanup.policy") ?? "-", d.key.isEmpty ? "-" : d.key, topic.setting ?? "-", topic.declaredName ?? "-"])
        }
        let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
    }

    /// `604800000` → `7d`; `-1` → `forever`; absent → `-`.
    static func retention(_ milliseconds: String?) -> String {
        guard let text = milliseconds else { return "-" }
        guard let value = Int64(text) else { return text }
        if value < 0 { return "forever" }
        let units: [(Int64, String)] = [(86_400_000, "d"), (3_600_000, "h"), (60_000, "m"), (1000, "s")]
        for (size, unit) in units where value >= size && value % size == 0 { return "\(value / size)\(unit)" }
        return "\(value)ms"
    }

    static func json(_ topics: [NamedTopic]) -> String {
        let items: [JSONValue] = topics.map { topic in
            let d = topic.declaration
            return .object(JSONObject([
                ("name", .string(d.name)),
                ("setting", topic.setting.map(JSONValue.string) ?? .null),
                ("declaredName", .string(topic.declaredName ?? d.name)),
                ("partitions", .number(JSONNumber(d.partitions))),
                ("replicationFactor", .number(JSONNumber(d.replicationFactor))),
                ("config", .object(JSONObject(d.config.map { ($0.key, JSONValue.string($0.value)) }))),
                ("key", .string(d.key)),
                ("value", .string(d.value)),
                ("valueSchema", d.valueSchema.map(JSONValue.string) ?? .null),
                ("purpose", .string(d.purpose)),
            ]))
        }
        return JSONValue.array(items).jsonString()
    }
}
