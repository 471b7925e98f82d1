import Dispatch
import PushRuntime
import Foundation
import PushCLI
import PushCore
import PushKafka
import PushRedis
import PushWorker
import Synchronization
import PushEncoding

/// `pushworker inspect results|dlq|stats` (docs/reference/cli.md): what happened, read from the topics
/// (from the beginning to their current end, with partitions assigned directly: no consumer
/// group joins, nothing is committed) and from Redis.
enum InspectCommand {
    static let usage = """
    usage: pushworker inspect results [--job ID | --campaign ID] [--app A] [--all] [--json]
           pushworker inspect dlq [--partition P] [--offset N] [--all] [--json]
           pushworker inspect dlq --replay [--partition P] [--offset N] [--dry-run] [--force]
           pushworker inspect stats CAMPAIGN [--app A] [--json]
      common: [--topic T] [--timeout SECONDS] [--verbose]

    Reads the topics at PUSHWORKER_KAFKA_BROKERS (PUSHWORKER_RDKAFKA_* apply) from the beginning
    to their end as it is when the command starts, assigning the partitions itself: it joins no
    consumer group and commits nothing. Progress goes to stderr about once a second on long
    scans.

    results   delivery results (PUSHWORKER_TOPIC_RESULTS) of a job (and its --batch batches
              ID:0000…), a campaign, or all, counted by status, reason and platform.
              --all prints the matching result lines on stdout (the summary then goes to
              stderr); --json prints the summary as one JSON object.
    dlq       every dead-lettered record (PUSHWORKER_TOPIC_DLQ) with its error headers (error,
              source-topic/partition/offset, failed-at, truncated-from, target-topic) and the
              original headers; --all adds the value, --json prints one JSON object per record.
              --partition/--offset select one partition / the record at that offset.
      --replay    produces the selected records back onto PUSHWORKER_TOPIC_JOBS, keyed as before,
                  with their original headers plus replayed-from (dlq[partition]@offset) and
                  replayed-at. Skipped: truncated copies, copies of results or tokens, and jobs
                  still invalid for this pushworker (--force replays those anyway). Devices
                  are not notified twice: sent msgIds are de-duplicated in Redis.
      --dry-run   says what would be replayed, produces nothing
    stats     a campaign's deliveries (results topic: sent, invalid_token, rejected, failed …
              overall and per variant) and its tracking counters from Redis
              (PUSHWORKER_REDIS_URL; pushworker events writes them): delivered, opened,
              clicked, dismissed, counted and unique, with unique/sent rates. --app names the
              app (default: the apps seen in the campaign's results).

    options:
      --topic T          read this topic instead of the configured one
      --timeout SECONDS  per broker request, and the longest wait for a record (default 15)
      --verbose          show librdkafka's warnings and errors

    Exit 0 done (dlq --replay: every selected record replayed), 1 no results found for the
    --job, --campaign or --app asked for (results; stats without --app) or some records skipped
    by --replay, 64 usage, 69 Kafka or Redis unavailable, 78 configuration.
    """

    static func main(_ arguments: [String]) -> Int32 {
        var code: Int32 = 0
        guard let parsed = CommandSupport.parse(arguments, usage: usage,
                                                values: ["job", "campaign", "app", "topic", "timeout", "partition", "offset"],
                                                flags: ["json", "all", "replay", "dry-run", "force", "verbose"], exitCode: &code) else { return code }
        CommandSupport.quietKafkaLogs(unless: parsed.flag("verbose"))
        guard let verb = parsed.positionals.first else { return CommandSupport.usageError("expected results, dlq or stats", usage: usage) }
        guard let options = CommandSupport.usageChecked(usage, { () throws(UsageError) -> Options in try Options(parsed, verb: verb) }) else {
            return ExitCode.usage
        }
        guard let configuration = CommandSupport.configuration(.enqueue) else { return ExitCode.config }
        let reader: KafkaTopicReader
        do { reader = try KafkaTopicReader(properties: configuration.kafkaProperties(for: .consumer), timeout: .seconds(options.timeout)) } catch {
            printError("error: \(error.message)")
            return ExitCode.config
        }
        defer { reader.close() }
        do {
            switch verb {
            case "results": return try results(options, configuration: configuration, reader: reader)
            case "dlq": return try deadLetters(options, configuration: configuration, reader: reader)
            default: return try stats(options, configuration: configuration, reader: reader)
            }
        } catch let error as KafkaError {
            printError("error: \(error.message) [\(error.name)] at \(configuration.kafkaBrokers)")
            return ExitCode.unavailable
        } catch {
            printError("error: \(error)")
            return ExitCode.unavailable
        }
    }

    struct Options {
        var verb: String
        var jobID: String?
        var campaignID: String?
        var appID: String?
        var topic: String?
        var timeout: Int
        var partition: Int32?
        var offset: Int64?
        var json, all, replay, dryRun, force: Bool

        init(_ parsed: CommandArguments, verb: String) throws(UsageError) {
            self.verb = verb
            jobID = parsed.value("job"); campaignID = parsed.value("campaign"); appID = parsed.value("app"); topic = parsed.value("topic")
            timeout = try parsed.integer("timeout", default: 15, in: 1...3600)
            partition = parsed.value("partition") == nil ? nil : Int32(try parsed.integer("partition", default: 0, in: 0...100_000))
            offset = parsed.value("offset") == nil ? nil : Int64(try parsed.integer("offset", default: 0, in: 0...Int(Int64.max)))
            json = parsed.flag("json"); all = parsed.flag("all"); replay = parsed.flag("replay"); dryRun = parsed.flag("dry-run"); force = parsed.flag("force")
            switch verb {
            case "results":
                guard parsed.positionals.count == 1 else { throw UsageError("results takes no argument") }
                if jobID != nil && campaignID != nil { throw UsageError("give --job or --campaign, not both") }
                if replay || dryRun || force || partition != nil || offset != nil { throw UsageError("--replay, --dry-run, --force, --partition and --offset are for dlq") }
            case "dlq":
                guard parsed.positionals.count == 1 else { throw UsageError("dlq takes no argument") }
                if jobID != nil || campaignID != nil || appID != nil { throw UsageError("--job, --campaign and --app are for results and stats") }
                if (dryRun || force) && !replay { throw UsageError("--dry-run and --force go with --replay") }
                if replay && (json || all) { throw UsageError("--replay prints what it does: no --json or --all") }
            case "stats":
                guard parsed.positionals.count == 2 else { throw UsageError("stats needs the campaign id: inspect stats CAMPAIGN") }
                campaignID = parsed.positionals[1]
                if jobID != nil || all || replay || dryRun || force || partition != nil || offset != nil {
                    throw UsageError("stats takes only CAMPAIGN, --app, --json, --topic, --timeout")
                }
            default:
                throw UsageError(CommandSupport.unknownSubcommandMessage(verb, among: ["results", "dlq", "stats"]))
            }
        }
    }

    /// Progress lines on stderr (`inspect: push.results.v1 120000/500000 (24 %)`).
    static func progress(_ topic: String) -> (Int64, Int64) -> Void {
        { read, total in
            let percent = total > 0 ? Int(Double(read) * 100 / Double(total)) : 100
            printError("inspect: \(topic) \(read)/\(total) (\(percent) %)")
        }
    }

    // MARK: results

    static func results(_ options: Options, configuration: Configuration, reader: KafkaTopicReader) throws -> Int32 {
        let topic = options.topic ?? configuration.topicResults
        var summary = ResultSummary(filter: ResultFilter(jobID: options.jobID, campaignID: options.campaignID, appID: options.appID))
        try reader.read(topic, spans: try reader.spans(topic), progress: progress(topic)) { message in
            if summary.add(message.value) != nil, options.all { CommandSupport.writeLine(String(decoding: message.value, as: UTF8.self)) }
            return true
        }
        let output: (String) -> Void = options.all ? { printError($0) } : { CommandSupport.writeLine($0) }
        if options.json {
            output(summary.json(topic: topic))
        } else {
            var scope = "all results"
            if let job = options.jobID { scope = "job \(job)" }
            if let campaign = options.campaignID { scope = "campaign \(campaign)" }
            if let app = options.appID { scope += " of app \(app)" }
            output("\(scope) in \(topic): \(summary.matched) of \(summary.scanned) results" + (summary.unreadable > 0 ? " (\(summary.unreadable) unreadable)" : ""))
            if summary.matched > 0 {
                for line in summary.table() { output(line) }
                if let first = summary.firstAt, let last = summary.lastAt { output("first \(first), last \(last)") }
            }
        }
        // A query for one job, campaign or app that matched nothing is an answer a script must
        // not mistake for "all good": exit 1.
        if summary.matched == 0, let what = notFound(options) {
            printError("inspect: no results found for \(what) in \(topic) (\(summary.scanned) scanned)")
            return ExitCode.failure
        }
        return ExitCode.ok
    }

    /// What a `results` query asked for (`job j1`, `campaign c1 of app a`), nil when it asked for everything.
    static func notFound(_ options: Options) -> String? {
        var parts: [String] = []
        if let job = options.jobID { parts.append("job \(job)") }
        if let campaign = options.campaignID { parts.append("campaign \(campaign)") }
        if let app = options.appID { parts.append(parts.isEmpty ? "app \(app)" : "of app \(app)") }
        return parts.isEmpty ? nil : parts.joined(separator: " ")
    }

    // MARK: dlq

    static func deadLetters(_ options: Options, configuration: Configuration, reader: KafkaTopicReader) throws -> Int32 {
        let topic = options.topic ?? configuration.topicDLQ
        var spans = try reader.spans(topic)
        if let partition = options.partition {
            spans = spans.filter { $0.partition == partition }
            guard !spans.isEmpty else { throw InspectError("\(topic) has no partition \(partition)") }
        }
        if let offset = options.offset {
            spans = spans.compactMap { span in
                guard offset >= span.start, offset < span.end else { return nil }
                return KafkaTopicReader.Span(partition: span.partition, start: offset, end: offset + 1)
            }
            guard !spans.isEmpty else { throw InspectError("no record at offset \(options.offset ?? 0) of \(topic)\(options.partition.map { "[\($0)]" } ?? "")") }
            if spans.count > 1 && options.replay {
                throw InspectError("offset \(offset) exists in partitions \(spans.map(\.partition)): choose one with --partition")
            }
        }
        var entries: [DeadLetterEntry] = []
        try reader.read(topic, spans: spans, progress: progress(topic)) { message in
            let entry = DeadLetterEntry(message)
            entries.append(entry)
            if options.replay { return true }
            if options.json {
                CommandSupport.writeLine(entry.json(includeValue: options.all))
            } else {
                for line in entry.lines() { CommandSupport.writeLine(line) }
                if options.all { CommandSupport.writeLine("  value: " + String(decoding: entry.value, as: UTF8.self)) }
            }
            return true
        }
        guard options.replay else {
            if !options.json { printError("inspect: \(entries.count) dead-lettered record\(entries.count == 1 ? "" : "s") in \(topic)") }
            return ExitCode.ok
        }
        return try replay(entries, options: options, configuration: configuration)
    }

    static func replay(_ entries: [DeadLetterEntry], options: Options, configuration: Configuration) throws -> Int32 {
        let target = configuration.topicJobs
        let jobTopics: Set<String> = [configuration.topicJobs, configuration.topicRetry]
        var selected: [DeadLetterEntry] = []
        var skipped = 0
        for entry in entries {
            if let refusal = entry.replayRefusal(jobTopics: jobTopics) {
                CommandSupport.writeLine("skipped \(entry.position): \(refusal)")
                skipped += 1
                continue
            }
            do throws(JobValidationError) { _ = try JobDecoder.decode(entry.value) } catch {
                if !options.force {
                    CommandSupport.writeLine("skipped \(entry.position): still invalid: \(error.problems.first?.description ?? "\(error)")\(error.problems.count > 1 ? " (and \(error.problems.count - 1) more)" : "") — fix it, or --force")
                    skipped += 1
                    continue
                }
            }
            selected.append(entry)
        }
        if options.dryRun {
            for entry in selected { CommandSupport.writeLine("would replay \(entry.position) → \(target) key=\(entry.keyText ?? "<none>")") }
            printError("inspect: would replay \(selected.count), skip \(skipped)")
            return skipped > 0 ? ExitCode.failure : ExitCode.ok
        }
        if !selected.isEmpty {
            let producer = try KafkaProducer(properties: configuration.kafkaProperties(for: .producer, extra: ["message.timeout.ms": "\(options.timeout * 1000)"]))
            defer { producer.close(timeout: .seconds(5)) }
            let failures = Mutex<[String: KafkaError]>([:])
            let group = DispatchGroup()
            let replayedAt = RFC3339Timestamp.format(Date(), milliseconds: true)
            for entry in selected {
                var headers = entry.originalHeaders
                headers.append(KafkaHeader(name: "replayed-from", string: entry.position))
                headers.append(KafkaHeader(name: "replayed-at", string: replayedAt))
                group.enter()
                let position = entry.position
                producer.produce(topic: target, key: entry.key, value: entry.value, headers: headers) { result in
                    if case .failure(let error) = result { failures.withLock { $0[position] = error } }
                    group.leave()
                }
            }
            group.wait()
            let failed = failures.withLock { $0 }
            for entry in selected {
                if let error = failed[entry.position] {
                    CommandSupport.writeLine("failed \(entry.position): \(error.message) [\(error.name)]")
                } else {
                    CommandSupport.writeLine("replayed \(entry.position) → \(target) key=\(entry.keyText ?? "<none>")\(entry.identifiers.jobID.map { " jobId=\($0)" } ?? "")")
                }
            }
            if !failed.isEmpty {
                printError("inspect: \(failed.count) of \(selected.count) not produced to \(target)")
                return ExitCode.unavailable
            }
        }
        printError("inspect: replayed \(selected.count), skipped \(skipped)")
        return skipped > 0 ? ExitCode.failure : ExitCode.ok
    }

    // MARK: stats

    static func stats(_ options: Options, configuration: Configuration, reader: KafkaTopicReader) throws -> Int32 {
        let campaign = options.campaignID ?? ""
        let topic = options.topic ?? configuration.topicResults
        // One pass: the campaign's results, per app (the same campaign id may exist in two apps).
        var all = ResultSummary(filter: ResultFilter(campaignID: campaign, appID: options.appID))
        var byApp: [String: ResultSummary] = [:]
        try reader.read(topic, spans: try reader.spans(topic), progress: progress(topic)) { message in
            let parsed = try? JSONParser.parse(message.value, maxDepth: 8)
            if all.add(parsed: parsed) != nil, let app = parsed?["appId"]?.stringValue {
                byApp[app, default: ResultSummary(filter: ResultFilter(campaignID: campaign, appID: app))].add(parsed: parsed)
            }
            return true
        }
        let apps = options.appID.map { [$0] } ?? all.apps.sorted()
        guard !apps.isEmpty else {
            printError("inspect: no results found for campaign \(campaign) in \(topic) (\(all.scanned) scanned): give --app to read its tracking counters")
            return ExitCode.failure
        }
        var status = ExitCode.ok
        var redis: (any RedisPipelining)?
        var note: String?
        if configuration.redisURL.isEmpty {
            note = "PUSHWORKER_REDIS_URL is not set"
        } else {
            do { redis = try configuration.redisClient() } catch { note = "PUSHWORKER_REDIS_URL: \(error)" }
        }
        defer { redis?.close() }
        for app in apps {
            let appSummary = byApp[app] ?? ResultSummary(filter: ResultFilter(campaignID: campaign, appID: app))
            let variants = appSummary.variants.keys.filter { !$0.isEmpty }.sorted()
            var tracking: (campaign: CampaignStats.Tracking, variants: [String: CampaignStats.Tracking])?
            var trackingNote = note
            if let redis {
                do {
                    let replies = try redis.pipeline(CampaignStats.commands(appID: app, campaignID: campaign, variants: variants))
                    tracking = try CampaignStats.parse(replies, variants: variants)
                } catch {
                    trackingNote = "Redis at \((try? configuration.redisTarget())?.description ?? "PUSHWORKER_REDIS_URL") did not answer: \(error)"
                    status = ExitCode.unavailable
                }
            }
            if options.json {
                CommandSupport.writeLine(CampaignStats.json(campaignID: campaign, appID: app, summary: appSummary, topic: topic, tracking: tracking))
            } else {
                for line in CampaignStats.lines(campaignID: campaign, appID: app, summary: appSummary, topic: topic,
                                                tracking: tracking, trackingNote: trackingNote) {
                    CommandSupport.writeLine(line)
                }
            }
            if tracking == nil, let trackingNote, options.json { printError("inspect: tracking not read: \(trackingNote)") }
        }
        return status
    }
}
