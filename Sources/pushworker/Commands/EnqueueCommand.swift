import Foundation
import PushRuntime
import PushCLI
import PushCore
import PushKafka
import PushWorker
import PushTools

/// `pushworker enqueue [FILE|-]` (docs/reference/cli.md): validates jobs and produces them to the jobs topic.
enum EnqueueCommand {
    static let usage = """
    usage: pushworker enqueue [FILE|-] [--batch N] [--topic T] [--skip-invalid] [--strict] [--timeout SECONDS] [--verbose]

    Validates fan-out jobs (docs/reference/job.md) and produces them to PUSHWORKER_TOPIC_JOBS (default
    push.jobs.v1) at PUSHWORKER_KAFKA_BROKERS, keyed by jobId, then waits for every
    acknowledgement. Jobs whose lane is transactional go to PUSHWORKER_TOPIC_JOBS_TRANSACTIONAL
    (default push.jobs.transactional.v1, docs/lanes.md). Input (a file, or standard input; at most 64 MiB): one job, or NDJSON
    (one job per line) when it starts with `{` and holds more than one JSON value.

    Every line is validated before anything is produced: an invalid line prints
    `line N: $.path: reason` for every problem and nothing is produced (exit 65). Unknown
    fields and template variables without a value or default are warnings
    (`line N: warning: …`, the first 20 shown). createdAt/expiresAt may be relative ("now",
    "+4h": examples/README.md); the produced job carries the resolved RFC 3339 date.

    options:
      --batch N          split each job into batches of N recipients (in order); batch k
                         (from 0) gets jobId <jobId>:<k>, k zero-padded to 4 digits (more when
                         there are over 10000 batches); every other member is kept
      --topic T          produce every job here instead of its lane's topic
      --skip-invalid     produce the valid jobs anyway; invalid lines are listed on stderr and
                         counted as skipped (exit 0 when the valid ones were produced)
      --strict           warnings make a job invalid
      --timeout SECONDS  give up on the broker after this long (default 30)
      --verbose          show librdkafka's warnings and errors (hidden otherwise: the
                         failure itself is always reported)

    Progress goes to stderr about once a second on long runs; one summary line to stdout:
      enqueued jobs=J batches=B recipients=R skipped=S topic=T seconds=X
    Exit 0 done, 64 usage, 65 invalid job, 66 unreadable input, 69 Kafka unavailable or a
    record not acknowledged (the line is named), 78 configuration.
    """

    static func main(_ arguments: [String]) -> Int32 {
        var code: Int32 = 0
        guard let parsed = CommandSupport.parse(arguments, usage: usage, values: ["batch", "topic", "timeout"],
                                                flags: ["skip-invalid", "verbose", "strict"], exitCode: &code) else { return code }
        CommandSupport.quietKafkaLogs(unless: parsed.flag("verbose"))
        guard parsed.positionals.count <= 1 else { return CommandSupport.usageError("one input at most", usage: usage) }
        guard let limits = CommandSupport.usageChecked(usage, {
            (batch: parsed.value("batch") == nil ? nil : try parsed.integer("batch", default: 1, in: 1...1_000_000),
             timeout: try parsed.integer("timeout", default: 30, in: 1...3600))
        }) else { return ExitCode.usage }
        let batch = limits.batch, timeout = limits.timeout
        if let topic = parsed.value("topic"), !TopicDeclarations.isValidTopicName(topic) {
            return CommandSupport.usageError("--topic must be 1…249 characters of [A-Za-z0-9._-], got \(topic)", usage: usage)
        }
        guard let configuration = CommandSupport.configuration(.enqueue) else { return ExitCode.config }
        let topic = parsed.value("topic") ?? configuration.topicJobs
        let input: [UInt8]
        do { input = try CommandSupport.readInput(parsed.positionals.first, notice: CommandSupport.stdinNotice(command: "pushworker enqueue", what: "jobs")) } catch {
            printError("error: \(error)")
            return ExitCode.noInput
        }
        var options = Enqueuer.Options(topic: topic, batchSize: batch, skipInvalid: parsed.flag("skip-invalid"), strict: parsed.flag("strict"))
        // docs/lanes.md: transactional jobs go to their own topic unless --topic names one for all.
        if parsed.value("topic") == nil { options.transactionalTopic = configuration.topicJobsTransactional }
        let enqueuer = Enqueuer(options: options) {
            printError($0)
        }
        // Validate before touching Kafka: an invalid file fails the same with the broker down.
        let checked: Enqueuer.Checked
        do { checked = try enqueuer.check(input) } catch {
            for message in error.messages { printError(message) }
            return error.exitCode
        }
        for warning in checked.warnings.prefix(20) { printError(warning) }
        if checked.warnings.count > 20 { printError("… and \(checked.warnings.count - 20) more warnings") }
        // The producer first: its broker connections come up while the preflight runs.
        let producer: KafkaProducer
        do {
            var extra = ["message.timeout.ms": "\(timeout * 1000)"]
            if configuration.rdkafkaProperties["message.max.bytes"] == nil { extra["message.max.bytes"] = "4194304" }
            producer = try KafkaProducer(properties: configuration.kafkaProperties(for: .producer, extra: extra))
        } catch {
            printError("error: \(error.message)")
            return ExitCode.config
        }
        defer { producer.close(timeout: .seconds(5)) }
        let admin: KafkaAdmin
        let transactionalTopic = checked.transactionalJobs > 0 ? options.transactionalTopic : nil
        switch preflight(configuration, topic: topic, also: transactionalTopic, timeout: .seconds(timeout)) {
        case .failure(let problem): printError("error: \(problem.message)"); return ExitCode.unavailable
        case .success(let client): admin = client
        }
        defer { admin.close() }
        do {
            let summary = try enqueuer.produce(checked, producer: producer)
            CommandSupport.writeLine(summary.line(topic: topic, transactionalTopic: transactionalTopic))
            return ExitCode.ok
        } catch {
            for message in error.messages { printError(message) }
            return error.exitCode
        }
    }

    struct Problem: Error { var message: String }

    /// Checks that the cluster answers and has `topic` (and `also`, the transactional topic when
    /// jobs go there). The admin client is closed by the caller at the end (librdkafka's destroy
    /// can take a second: not inside the timing).
    static func preflight(_ configuration: Configuration, topic: String, also: String? = nil, timeout: Duration) -> Result<KafkaAdmin, Problem> {
        let admin: KafkaAdmin
        do { admin = try KafkaAdmin(properties: configuration.kafkaProperties(for: .producer), timeout: timeout) } catch {
            return .failure(Problem(message: error.message))
        }
        do {
            let metadata = try admin.metadata()
            for name in [topic] + (also.map { [$0] } ?? []) where metadata.topic(name) == nil {
                admin.close()
                return .failure(Problem(message: "topic \(name) does not exist at \(configuration.kafkaBrokers) (create it: pushworker topics apply)"))
            }
            return .success(admin)
        } catch {
            admin.close()
            return .failure(Problem(message: "Kafka at \(configuration.kafkaBrokers) did not answer within \(timeout): \(error.message) [\(error.name)]"))
        }
    }
}
