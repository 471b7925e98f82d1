import Foundation
import PushCore
import PushKafka
import PushKafkaMock
@testable import PushTools
import PushTestSupport
import Synchronization
import Testing
@testable import PushWorker

/// Runs blocking `body` on a thread of its own, off the cooperative pool.
private func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in Thread { continuation.resume(returning: body()) }.start() }
}

/// Reads `count` records from `topics` with a fresh consumer group (or until `timeout`).
private func readBack(_ bootstrap: String, topics: [String], count: Int, timeout: Duration = .seconds(40)) throws -> [KafkaMessage] {
    let consumer = try KafkaConsumer(properties: ["bootstrap.servers": bootstrap, "group.id": "enqueue-\(UUID().uuidString.prefix(8))",
                                                  "session.timeout.ms": "6000", "heartbeat.interval.ms": "500"], topics: topics)
    defer { consumer.close() }
    let deadline = ContinuousClock.now + timeout
    var messages: [KafkaMessage] = []
    while messages.count < count && ContinuousClock.now < deadline {
        for case .success(let message) in consumer.pollBatch(max: 100, timeout: .milliseconds(100)) { messages.append(message) }
    }
    // A little longer: anything beyond `count` is a bug (e.g. a produced invalid line).
    let extra = ContinuousClock.now + .milliseconds(500)
    while ContinuousClock.now < extra {
        for case .success(let message) in consumer.pollBatch(max: 100, timeout: .milliseconds(100)) { messages.append(message) }
    }
    return messages
}

@Suite("enqueue produces to Kafka (mock cluster)")
struct EnqueueKafkaTests {
    @Test("single job, NDJSON, --batch and an invalid file: read back keyed by jobId, nothing from the invalid file")
    func roundTrip() async throws {
        let cluster = try KafkaMockCluster()
        defer { cluster.close() }
        for (topic, partitions) in [("enq.single", 2), ("enq.nd", 3), ("enq.batch", 4), ("enq.invalid", 1)] {
            try cluster.createTopic(topic, partitions: Int32(partitions))
        }
        let bootstrap = cluster.bootstrapServers
        let outcome: Result<[Enqueuer.Summary], Enqueuer.Failure> = await onOwnThread {
            do {
                let producer = try KafkaProducer(properties: ["bootstrap.servers": bootstrap])
                defer { producer.close(timeout: .seconds(5)) }
                var summaries: [Enqueuer.Summary] = []
                let pretty = "{\n  " + enqueueTestJob(id: "single-1", recipients: 3).dropFirst() + "\n"
                summaries.append(try Enqueuer(options: .init(topic: "enq.single")).run(Array(pretty.utf8), producer: producer))
                let ndjson = (1...3).map { enqueueTestJob(id: "nd-\($0)", recipients: $0) }.joined(separator: "\n") + "\n"
                summaries.append(try Enqueuer(options: .init(topic: "enq.nd")).run(Array(ndjson.utf8), producer: producer))
                summaries.append(try Enqueuer(options: .init(topic: "enq.batch", batchSize: 3)).run(Array(enqueueTestJob(id: "big", recipients: 10).utf8), producer: producer))
                let invalid = enqueueTestJob(id: "never") + "\n" + #"{"schemaVersion":1,"jobId":"x"}"# + "\n"
                do {
                    _ = try Enqueuer(options: .init(topic: "enq.invalid")).run(Array(invalid.utf8), producer: producer)
                    return .failure(Enqueuer.Failure(exitCode: 0, messages: ["invalid input was accepted"]))
                } catch let error as Enqueuer.Failure {
                    guard error.exitCode == 65, error.messages.first?.hasPrefix("line 2: $.appId: ") == true else { return .failure(error) }
                }
                summaries.append(try Enqueuer(options: .init(topic: "enq.invalid")).run(Array(enqueueTestJob(id: "after").utf8), producer: producer))
                return .success(summaries)
            } catch let error as Enqueuer.Failure {
                return .failure(error)
            } catch {
                return .failure(Enqueuer.Failure(exitCode: 1, messages: ["\(error)"]))
            }
        }
        let summaries = try outcome.get()
        #expect(summaries.map(\.jobs) == [1, 3, 1, 1])
        #expect(summaries.map(\.batches) == [1, 3, 4, 1])
        #expect(summaries.map(\.recipients) == [3, 6, 10, 2])

        let messages = try await onOwnThread { Result { try readBack(bootstrap, topics: ["enq.single", "enq.nd", "enq.batch", "enq.invalid"], count: 9) } }.get()
        #expect(messages.count == 9)
        func keys(_ topic: String) -> [String] {
            messages.filter { $0.topic == topic }.map { String(decoding: $0.key ?? [], as: UTF8.self) }.sorted()
        }
        #expect(keys("enq.single") == ["single-1"])
        #expect(keys("enq.nd") == ["nd-1", "nd-2", "nd-3"])
        #expect(keys("enq.batch") == ["big:0000", "big:0001", "big:0002", "big:0003"])
        #expect(keys("enq.invalid") == ["after"])
        var recipients: [String] = []
        for message in messages {
            let job = try JobDecoder.decode(message.value)
            #expect(Array(job.jobID.utf8) == message.key ?? [])
            if message.topic == "enq.batch" {
                #expect(job.recipients.count <= 3)
                recipients += job.recipients.map(\.subscriptionID)
            }
        }
        #expect(recipients.sorted() == (0..<10).map { "s\($0)" }.sorted())
        #expect(Set(recipients).count == 10)
        // Without --batch the record is the input verbatim.
        let nd2 = try #require(messages.first { $0.key == Array("nd-2".utf8) })
        #expect(nd2.value == Array(enqueueTestJob(id: "nd-2", recipients: 2).utf8))
    }

    @Test("progress lines report documents, jobs produced and recipients; tight in-flight limits still deliver everything")
    func progress() async throws {
        let cluster = try KafkaMockCluster()
        defer { cluster.close() }
        try cluster.createTopic("enq.progress", partitions: 2)
        let bootstrap = cluster.bootstrapServers
        let lines = Mutex<[String]>([])
        let summary: Result<Enqueuer.Summary, Enqueuer.Failure> = await onOwnThread {
            do {
                let producer = try KafkaProducer(properties: ["bootstrap.servers": bootstrap])
                defer { producer.close(timeout: .seconds(5)) }
                let input = (1...50).map { enqueueTestJob(id: "p-\($0)", recipients: 2) }.joined(separator: "\n")
                var options = Enqueuer.Options(topic: "enq.progress", maxInFlight: 3, progressInterval: .zero)
                options.maxInFlightBytes = 1   // one record at a time by bytes
                let enqueuer = Enqueuer(options: options) { line in lines.withLock { $0.append(line) } }
                return .success(try enqueuer.run(Array(input.utf8), producer: producer))
            } catch let error as Enqueuer.Failure {
                return .failure(error)
            } catch {
                return .failure(Enqueuer.Failure(exitCode: 1, messages: ["\(error)"]))
            }
        }
        #expect(try summary.get().batches == 50)
        let seen = lines.withLock { $0 }
        #expect(seen.contains { $0.hasPrefix("validating: ") && $0.contains("/50 documents") })
        #expect(seen.contains { $0.hasPrefix("producing: ") && $0.contains("recipients") })
    }

    @Test("the CLI prints a one-line summary after every acknowledgement")
    func cliSummary() throws {
        let cluster = try KafkaMockCluster()
        defer { cluster.close() }
        try cluster.createTopic("push.jobs.v1", partitions: 2)
        let input = Data((enqueueTestJob(id: "c1", recipients: 5) + "\n" + enqueueTestJob(id: "c2", recipients: 1) + "\n").utf8)
        let result = try runCommand(BuiltProducts.pushworker, ["enqueue", "-", "--batch", "2"], stdin: input,
                                    environment: ["PUSHWORKER_KAFKA_BROKERS": cluster.bootstrapServers], timeout: 60)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("enqueued jobs=2 batches=4 recipients=6 skipped=0 topic=push.jobs.v1 seconds="))
        #expect(result.stdout.split(separator: "\n").count == 1)
    }

    @Test("the CLI: an invalid line exits 65 naming it, before Kafka is contacted")
    func cliInvalid() throws {
        let folder = try TemporaryFolder.make(prefix: "enqueue-invalid")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("jobs.ndjson")
        try Data((enqueueTestJob(id: "ok") + "\n\n" + #"{"schemaVersion":1,"jobId":"j","appId":"../x","campaignId":"c"}"# + "\n").utf8).write(to: file)
        let result = try runCommand(BuiltProducts.pushworker, ["enqueue", file.path],
                                    environment: ["PUSHWORKER_KAFKA_BROKERS": "127.0.0.1:\(freeLoopbackPort())"], timeout: 30)
        #expect(result.status == 65)
        #expect(result.stderr.contains("line 3: $.appId: "))
        #expect(result.stderr.contains("nothing produced"))
        #expect(result.stdout.isEmpty)
    }

    @Test("the CLI: a broker that is down exits 69 with a message, within the timeout")
    func cliBrokerDown() throws {
        let port = freeLoopbackPort()
        let started = Date()
        let result = try runCommand(BuiltProducts.pushworker, ["enqueue", "--timeout", "2"], stdin: Data(enqueueTestJob(id: "down").utf8),
                                    environment: ["PUSHWORKER_KAFKA_BROKERS": "127.0.0.1:\(port)"], timeout: 30)
        #expect(result.status == 69)
        #expect(result.stderr.contains("Kafka at 127.0.0.1:\(port) did not answer"))
        #expect(Date().timeIntervalSince(started) < 15)
    }

    @Test("the CLI: a missing topic exits 69 and points at topics apply")
    func cliMissingTopic() throws {
        let cluster = try KafkaMockCluster()
        defer { cluster.close() }
        let result = try runCommand(BuiltProducts.pushworker, ["enqueue", "--topic", "enq.absent"], stdin: Data(enqueueTestJob(id: "m").utf8),
                                    environment: ["PUSHWORKER_KAFKA_BROKERS": cluster.bootstrapServers], timeout: 30)
        #expect(result.status == 69)
        #expect(result.stderr.contains("topic enq.absent does not exist"))
        #expect(result.stderr.contains("topics apply"))
    }

    @Test("the CLI: usage errors exit 64", arguments: [
        ["enqueue", "--batch", "0"], ["enqueue", "--batch", "x"], ["enqueue", "a", "b"], ["enqueue", "--frob"],
        ["enqueue", "--topic", "bad topic"], ["enqueue", "--timeout", "0"],
    ])
    func cliUsage(_ arguments: [String]) throws {
        let result = try runCommand(BuiltProducts.pushworker, arguments, environment: ["PUSHWORKER_KAFKA_BROKERS": "127.0.0.1:1"])
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix("pushworker enqueue: ") && result.stderr.contains("run 'pushworker enqueue --help' for usage"),
                "\(result.stderr)")
    }

    @Test("the CLI: missing configuration exits 78; --help documents the batch rule")
    func cliConfigAndHelp() throws {
        let missing = try runCommand(BuiltProducts.pushworker, ["enqueue"], stdin: Data(enqueueTestJob(id: "x").utf8),
                                     environment: ["PUSHWORKER_KAFKA_BROKERS": ""])
        #expect(missing.status == 78)
        #expect(missing.stderr.contains("PUSHWORKER_KAFKA_BROKERS is required"))
        let help = try runCommand(BuiltProducts.pushworker, ["enqueue", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("<jobId>:<k>"))
        #expect(help.stdout.contains("--skip-invalid"))
    }
}
