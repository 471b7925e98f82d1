import Foundation
import PushKafka
import PushKafkaMock
import PushTestSupport
import Synchronization
import Testing

@Suite("Kafka clients on librdkafka's mock cluster", .serialized)
struct KafkaClientTests {
    @Test("records keep their key, value and headers; delivery reports carry increasing offsets")
    func produceConsumeWithKeysAndHeaders() async throws {
        let cluster = try KafkaMockCluster()
        try cluster.createTopic("jobs", partitions: 1)
        let producer = try KafkaProducer(properties: ["bootstrap.servers": cluster.bootstrapServers])
        let headers = [KafkaHeader(name: "source-topic", string: "push.jobs.v1"),
                       KafkaHeader(name: "null-header", value: nil),
                       KafkaHeader(name: "empty-header", value: [])]
        let first = try await producer.produce(topic: "jobs", key: Array("job-1".utf8), value: Array("{\"a\":1}".utf8), headers: headers)
        let second = try await producer.produce(topic: "jobs", key: nil, value: [])
        #expect(first == KafkaDeliveryReport(topic: "jobs", partition: 0, offset: 0))
        #expect(second.offset == 1)
        producer.close(timeout: .seconds(1))

        let consumer = try KafkaConsumer(properties: consumerProperties(cluster.bootstrapServers, group: unique("g")), topics: ["jobs"])
        let (messages, errors) = await onThread { consume(consumer, count: 2) }
        #expect(errors.isEmpty, "\(errors)")
        try #require(messages.count == 2)
        #expect(messages[0].key == Array("job-1".utf8))
        #expect(messages[0].value == Array("{\"a\":1}".utf8))
        #expect(messages[0].headers == headers)
        #expect(messages[0].header("source-topic")?.value == Array("push.jobs.v1".utf8))
        #expect(messages[0].offset == 0 && messages[0].topic == "jobs" && messages[0].partition == 0)
        #expect(messages[0].timestampMs.map { $0 > 1_600_000_000_000 } == true)
        #expect(messages[1].key == nil)
        #expect(messages[1].value.isEmpty)
        #expect(messages[1].headers.isEmpty)
        #expect(consumer.hasJoinedGroup)
        #expect(consumer.assignment == [TopicPartition(topic: "jobs", partition: 0)])
        let events = consumer.drainRebalanceEvents()
        #expect(events.first == .assigned([TopicPartition(topic: "jobs", partition: 0)]))
        // Nothing committed: the lag is the whole partition.
        #expect(await onThread { consumer.lag() } == [TopicPartition(topic: "jobs", partition: 0): 2])
        await onThread { consumer.close() }
    }

    @Test("a producer's event thread is named pw-rdk-producer in the kernel (top -H, perf, scripts/thread-cpu.py)")
    func eventThreadName() async throws {
        let cluster = try KafkaMockCluster()
        try cluster.createTopic("named", partitions: 1)
        let producer = try KafkaProducer(properties: ["bootstrap.servers": cluster.bootstrapServers])
        defer { producer.close(timeout: .seconds(1)) }
        // Delivered: its report came through the event thread, which names itself first.
        _ = try await producer.produce(topic: "named", key: nil, value: Array("x".utf8))
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
        let names = tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(names.contains("pw-rdk-producer"), "\(names.sorted())")
    }

    @Test("the completion-handler produce reports every record once")
    func completionHandlerProduce() throws {
        let cluster = try KafkaMockCluster()
        try cluster.createTopic("results", partitions: 3)
        let producer = try KafkaProducer(properties: ["bootstrap.servers": cluster.bootstrapServers])
        let reports = Mutex<[Result<KafkaDeliveryReport, KafkaError>]>([])
        for i in 0..<50 {
            producer.produce(topic: "results", key: Array("k\(i)".utf8), value: Array("v\(i)".utf8)) { result in
                reports.withLock { $0.append(result) }
            }
        }
        try producer.flush(timeout: .seconds(10))
        let all = reports.withLock { $0 }
        #expect(all.count == 50)
        let delivered = all.compactMap { try? $0.get() }
        #expect(delivered.count == 50)
        #expect(Set(delivered.map { "\($0.partition):\($0.offset)" }).count == 50)
        producer.close(timeout: .seconds(1))
    }

    @Test("records sharing one delivery handler are each reported once, and land with their key and value")
    func sharedHandlerProduce() async throws {
        let cluster = try KafkaMockCluster()
        try cluster.createTopic("results", partitions: 3)
        let producer = try KafkaProducer(properties: ["bootstrap.servers": cluster.bootstrapServers])
        let outcomes = Mutex<[KafkaDelivery]>([])
        let handler = KafkaDeliveryHandler { delivery in outcomes.withLock { $0.append(delivery) } }
        for i in 0..<50 {
            let key = Array("k\(i)".utf8), value = Array("v\(i)".utf8)
            key.withUnsafeBytes { key in
                value.withUnsafeBytes { value in producer.produce(topic: "results", key: key, value: value, handler: handler) }
            }
        }
        // No key at all, and an empty value.
        producer.produce(topic: "results", key: nil, value: UnsafeRawBufferPointer(start: nil, count: 0), handler: handler)
        try producer.flush(timeout: .seconds(10))
        #expect(outcomes.withLock { $0 } == Array(repeating: .delivered, count: 51))
        producer.close(timeout: .seconds(1))

        let consumer = try KafkaConsumer(properties: consumerProperties(cluster.bootstrapServers, group: unique("g")), topics: ["results"])
        let (messages, errors) = await onThread { consume(consumer, count: 51) }
        #expect(errors.isEmpty, "\(errors)")
        #expect(Set(messages.map { "\($0.key.map { String(decoding: $0, as: UTF8.self) } ?? "nil")=\(String(decoding: $0.value, as: UTF8.self))" })
                == Set((0..<50).map { "k\($0)=v\($0)" } + ["nil="]))
        await onThread { consumer.close() }
    }

    @Test("a record that fails under a shared handler comes back with its topic, key and value, once: refused at once or failed later")
    func sharedHandlerFailures() async throws {
        let port = freeLoopbackPort()
        KafkaLogging.setLogHandler { _, _, _ in }
        defer { KafkaLogging.resetLogHandler() }
        let producer = try KafkaProducer(properties: ["bootstrap.servers": "127.0.0.1:\(port)", "message.max.bytes": "1000"])
        let outcomes = Mutex<[KafkaDelivery]>([])
        let handler = KafkaDeliveryHandler { delivery in outcomes.withLock { $0.append(delivery) } }
        let large = [UInt8](repeating: 0x61, count: 2000)
        // Too large: refused before it is queued (MSG_SIZE_TOO_LARGE), reported right here.
        Array("big".utf8).withUnsafeBytes { key in
            large.withUnsafeBytes { value in producer.produce(topic: "jobs", key: key, value: value, handler: handler) }
        }
        let refused = outcomes.withLock { $0 }
        try #require(refused.count == 1)
        guard case .failed(let error, let record) = refused[0] else { Issue.record("\(refused)"); return }
        #expect(error.code == 10)
        #expect(record == KafkaRecord(topic: "jobs", key: Array("big".utf8), value: large))
        // Queued for a broker that never answers: failed when the producer closes, read back
        // from the delivery report.
        Array("k".utf8).withUnsafeBytes { key in
            Array("v".utf8).withUnsafeBytes { value in producer.produce(topic: "jobs", key: key, value: value, handler: handler) }
        }
        await onThread { producer.close(timeout: .milliseconds(200)) }
        let all = outcomes.withLock { $0 }
        try #require(all.count == 2)
        guard case .failed(_, let queued) = all[1] else { Issue.record("\(all)"); return }
        #expect(queued == KafkaRecord(topic: "jobs", key: Array("k".utf8), value: Array("v".utf8)))
        // After close: refused at once, with its copy.
        producer.produce(topic: "jobs", key: nil, value: UnsafeRawBufferPointer(start: nil, count: 0), handler: handler)
        let last = outcomes.withLock { $0 }
        try #require(last.count == 3)
        #expect(last[2] == .failed(KafkaError(code: KafkaError.destroyed, message: "producer is closed"), KafkaRecord(topic: "jobs", key: nil, value: [])))
    }

    @Test("a record produced to a given partition lands there, whatever its key; a partition that does not exist is refused")
    func explicitPartition() throws {
        let cluster = try KafkaMockCluster()
        try cluster.createTopic("jobs", partitions: 4)
        let producer = try KafkaProducer(properties: ["bootstrap.servers": cluster.bootstrapServers])
        let reports = Mutex<[Result<KafkaDeliveryReport, KafkaError>]>([])
        for i in 0..<12 {
            producer.produce(topic: "jobs", partition: Int32(i % 4), key: Array("same key".utf8), value: Array("v\(i)".utf8)) { result in
                reports.withLock { $0.append(result) }
            }
        }
        try producer.flush(timeout: .seconds(10))
        let delivered = reports.withLock { $0 }.compactMap { try? $0.get() }
        #expect(delivered.count == 12)
        #expect(Dictionary(grouping: delivered, by: \.partition).mapValues(\.count) == [0: 3, 1: 3, 2: 3, 3: 3])
        // Partition 9 of a 4-partition topic: a delivery failure, not a crash or a silent success.
        let failure = Mutex<Result<KafkaDeliveryReport, KafkaError>?>(nil)
        producer.produce(topic: "jobs", partition: 9, key: nil, value: Array("x".utf8)) { result in failure.withLock { $0 = result } }
        _ = try? producer.flush(timeout: .seconds(10))
        let outcome = try #require(failure.withLock { $0 })
        #expect((try? outcome.get()) == nil, "\(outcome)")
        producer.close(timeout: .seconds(1))
    }

    @Test("poll returns nil when nothing arrives within the timeout")
    func pollTimesOut() async throws {
        let cluster = try KafkaMockCluster()
        try cluster.createTopic("quiet", partitions: 1)
        let consumer = try KafkaConsumer(properties: consumerProperties(cluster.bootstrapServers, group: unique("g")), topics: ["quiet"])
        let (result, elapsed) = await onThread {
            let clock = ContinuousClock()
            let start = clock.now
            let result = consumer.poll(timeout: .milliseconds(300))
            return (result.map { "\($0)" }, clock.now - start)
        }
        #expect(result == nil)
        #expect(elapsed >= .milliseconds(250))
        #expect(consumer.pollBatch(max: 10, timeout: .milliseconds(50)).isEmpty)
        await onThread { consumer.close() }
        #expect(consumer.poll(timeout: .milliseconds(10)) == nil, "poll after close is harmless")
    }

    @Test("a consumer resumes after the committed offset and uncommitted records are redelivered")
    func commitThenResume() async throws {
        let cluster = try KafkaMockCluster()
        try cluster.createTopic("jobs", partitions: 1)
        let producer = try KafkaProducer(properties: ["bootstrap.servers": cluster.bootstrapServers])
        for i in 0..<10 {
            _ = try await producer.produce(topic: "jobs", key: nil, value: Array("m\(i)".utf8))
        }
        producer.close(timeout: .seconds(1))
        let group = unique("g")
        let tp = TopicPartition(topic: "jobs", partition: 0)

        let first = try KafkaConsumer(properties: consumerProperties(cluster.bootstrapServers, group: group), topics: ["jobs"])
        let (read, commitError, lag): ([KafkaMessage], KafkaError?, [TopicPartition: Int64]) = await onThread {
            let (messages, _) = consume(first, count: 10)
            // Processed m0…m5: the next offset to read is 6.
            var commitError: KafkaError?
            do throws(KafkaError) { try first.commit([tp: 6]) } catch { commitError = error }
            let lag = first.lag()
            first.close()
            return (messages, commitError, lag)
        }
        #expect(read.map(\.offset) == Array(0..<10))
        #expect(commitError == nil)
        #expect(lag == [tp: 4])

        let second = try KafkaConsumer(properties: consumerProperties(cluster.bootstrapServers, group: group), topics: ["jobs"])
        let (again, _) = await onThread { consume(second, count: 4) }
        #expect(again.map(\.offset) == [6, 7, 8, 9])
        #expect(again.map { String(decoding: $0.value, as: UTF8.self) } == ["m6", "m7", "m8", "m9"])
        await onThread { second.close() }
    }

    @Test("a paused partition delivers nothing until resumed")
    func pauseResume() async throws {
        let cluster = try KafkaMockCluster()
        try cluster.createTopic("jobs", partitions: 1)
        let producer = try KafkaProducer(properties: ["bootstrap.servers": cluster.bootstrapServers])
        _ = try await producer.produce(topic: "jobs", key: nil, value: Array("before".utf8))
        let consumer = try KafkaConsumer(properties: consumerProperties(cluster.bootstrapServers, group: unique("g")), topics: ["jobs"])
        let tp = TopicPartition(topic: "jobs", partition: 0)
        let (before, _) = await onThread { consume(consumer, count: 1) }
        #expect(before.map(\.offset) == [0])

        consumer.pause([tp])
        _ = try await producer.produce(topic: "jobs", key: nil, value: Array("during".utf8))
        let (whilePaused, _) = await onThread { consume(consumer, count: 1, timeout: .milliseconds(1500)) }
        #expect(whilePaused.isEmpty)

        consumer.resume([tp])
        let (after, _) = await onThread { consume(consumer, count: 1) }
        #expect(after.map { String(decoding: $0.value, as: UTF8.self) } == ["during"])
        producer.close(timeout: .seconds(1))
        await onThread { consumer.close() }
    }

    @Test("two consumers split four partitions and the survivor takes all when one leaves")
    func groupRebalance() async throws {
        let cluster = try KafkaMockCluster()
        try cluster.createTopic("jobs", partitions: 4)
        let group = unique("g")
        let a = try KafkaConsumer(properties: consumerProperties(cluster.bootstrapServers, group: group), topics: ["jobs"])
        let b = try KafkaConsumer(properties: consumerProperties(cluster.bootstrapServers, group: group), topics: ["jobs"])
        let split = await onThread {
            pollUntil([a, b]) { a.assignment.count == 2 && b.assignment.count == 2 }
        }
        #expect(split, "a=\(a.assignment) b=\(b.assignment)")
        #expect(Set(a.assignment).isDisjoint(with: Set(b.assignment)))
        #expect(a.hasJoinedGroup && b.hasJoinedGroup)

        await closeWhilePolling(b, others: [a])
        let takeover = await onThread { pollUntil([a]) { a.assignment.count == 4 } }
        #expect(takeover, "a=\(a.assignment)")
        let events = a.drainRebalanceEvents()
        #expect(events.contains { if case .assigned = $0 { return true } else { return false } })
        await onThread { a.close() }
    }

    @Test("a paused partition that is revoked and assigned again delivers; one that stayed keeps its pause")
    func pauseAcrossRebalance() async throws {
        let cluster = try KafkaMockCluster()
        try cluster.createTopic("jobs", partitions: 2)
        let group = unique("g")
        let a = try KafkaConsumer(properties: consumerProperties(cluster.bootstrapServers, group: group), topics: ["jobs"])
        let joined = await onThread { pollUntil([a]) { a.assignment.count == 2 } }
        #expect(joined, "a=\(a.assignment)")
        a.pause(a.assignment)
        let b = try KafkaConsumer(properties: consumerProperties(cluster.bootstrapServers, group: group), topics: ["jobs"])
        let split = await onThread { pollUntil([a, b]) { a.assignment.count == 1 && b.assignment.count == 1 } }
        #expect(split, "a=\(a.assignment) b=\(b.assignment)")
        let moved = try #require(b.assignment.first)
        let stayed = try #require(a.assignment.first)
        await closeWhilePolling(b, others: [a])
        let back = await onThread { pollUntil([a]) { a.assignment.count == 2 } }
        #expect(back, "a=\(a.assignment)")

        let producer = try KafkaProducer(properties: ["bootstrap.servers": cluster.bootstrapServers])
        var toMoved = 0, toStayed = 0
        for index in 0..<40 {
            let report = try await producer.produce(topic: "jobs", key: Array("k\(index)".utf8), value: Array("m\(index)".utf8))
            if report.partition == moved.partition { toMoved += 1 } else { toStayed += 1 }
        }
        #expect(toMoved > 0 && toStayed > 0, "keys spread over both partitions: \(toMoved) / \(toStayed)")
        let expected = toMoved
        let (received, _) = await onThread { consume(a, count: expected, timeout: .seconds(20)) }
        #expect(received.count == toMoved, "the re-assigned partition \(moved.partition) delivers")
        #expect(received.allSatisfy { $0.partition == moved.partition }, "the partition that stayed (\(stayed.partition)) is still paused")
        producer.close(timeout: .seconds(1))
        await onThread { a.close() }
    }

    @Test("a broker that is down yields errors, not crashes, for consumers and producers")
    func brokerDown() async throws {
        let port = freeLoopbackPort()
        let recorder = LogRecorder()
        KafkaLogging.setLogHandler { level, facility, message in
            recorder.lines.withLock { $0.append((level, facility, message)) }
        }
        defer { KafkaLogging.resetLogHandler() }

        let consumer = try KafkaConsumer(properties: consumerProperties("127.0.0.1:\(port)", group: "g"), topics: ["jobs"])
        let failure: KafkaError? = await onThread {
            let clock = ContinuousClock()
            let deadline = clock.now + .seconds(15)
            while clock.now < deadline {
                if case .failure(let error) = consumer.poll(timeout: .milliseconds(200)) { return error }
            }
            return nil
        }
        let error = try #require(failure)
        #expect([KafkaError.transport, KafkaError.allBrokersDown].contains(error.code), "\(error)")
        #expect(!error.isFatal)
        await onThread { consumer.close() }

        let producer = try KafkaProducer(properties: ["bootstrap.servers": "127.0.0.1:\(port)", "message.timeout.ms": "1000"])
        await #expect(throws: KafkaError.self) {
            _ = try await producer.produce(topic: "jobs", key: nil, value: [1, 2, 3])
        }
        let errors = producer.drainErrors()
        #expect(errors.contains { [KafkaError.transport, KafkaError.allBrokersDown].contains($0.code) }, "\(errors)")
        producer.close(timeout: .zero)
        #expect(recorder.count > 0, "librdkafka logs are routed to the handler")
    }

    @Test("closing a producer completes records it could not deliver")
    func closeCompletesPending() async throws {
        let port = freeLoopbackPort()
        KafkaLogging.setLogHandler { _, _, _ in }
        defer { KafkaLogging.resetLogHandler() }
        let producer = try KafkaProducer(properties: ["bootstrap.servers": "127.0.0.1:\(port)"])
        let outcome = Mutex<Result<KafkaDeliveryReport, KafkaError>?>(nil)
        producer.produce(topic: "jobs", key: nil, value: [1]) { result in outcome.withLock { $0 = result } }
        await onThread { producer.close(timeout: .milliseconds(200)) }
        let result = try #require(outcome.withLock { $0 })
        #expect(throws: KafkaError.self) { try result.get() }
        // After close, produce fails at once instead of hanging.
        await #expect(throws: KafkaError.self) {
            _ = try await producer.produce(topic: "jobs", key: nil, value: [2])
        }
    }

    @Test("a completion may flush or close its own producer without deadlocking")
    func closeFromCompletion() async throws {
        let cluster = try KafkaMockCluster()
        try cluster.createTopic("jobs", partitions: 1)
        let producer = try KafkaProducer(properties: ["bootstrap.servers": cluster.bootstrapServers])
        let flushFailed = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            producer.produce(topic: "jobs", key: nil, value: [1]) { _ in
                var failed = false
                do throws(KafkaError) { try producer.flush(timeout: .seconds(5)) } catch { failed = true }
                producer.close(timeout: .seconds(1))
                continuation.resume(returning: failed)
            }
        }
        #expect(flushFailed)
        // The close finishes on another thread; then produce fails at once with _DESTROY.
        let closed = await onThread {
            eventually(timeout: 5) {
                let failure = Mutex<KafkaError?>(nil)
                producer.produce(topic: "jobs", key: nil, value: [2]) { result in
                    if case .failure(let error) = result { failure.withLock { $0 = error } }
                }
                return failure.withLock { $0?.code } == KafkaError.destroyed
            }
        }
        #expect(closed)
    }

    @Test("bad configuration throws a KafkaError")
    func badConfiguration() throws {
        #expect(throws: KafkaError.self) { _ = try KafkaProducer(properties: ["no.such.property": "1"]) }
        #expect(throws: KafkaError.self) { _ = try KafkaProducer(properties: ["acks": "sometimes"]) }
        #expect(throws: KafkaError.self) { _ = try KafkaConsumer(properties: ["bootstrap.servers": "127.0.0.1:1"], topics: ["t"]) }
        #expect(throws: KafkaError.self) { _ = try KafkaConsumer(properties: ["group.id": "g"], topics: []) }
        #expect(throws: KafkaError.self) { _ = try KafkaMockCluster(brokers: 0) }
        let cluster = try KafkaMockCluster(brokers: 2)
        #expect(cluster.bootstrapServers.split(separator: ",").count == 2)
        #expect(throws: KafkaError.self) { try cluster.createTopic("t", partitions: 0) }
    }
}

@Suite("Kafka group membership", .serialized, .timeLimit(.minutes(2)))
struct KafkaGroupMembershipTests {
    @Test("a member with an empty assignment still counts as joined")
    func emptyAssignmentJoins() async throws {
        let cluster = try KafkaMockCluster()
        try cluster.createTopic("one", partitions: 1)
        let group = unique("g")
        let a = try KafkaConsumer(properties: consumerProperties(cluster.bootstrapServers, group: group), topics: ["one"])
        let b = try KafkaConsumer(properties: consumerProperties(cluster.bootstrapServers, group: group), topics: ["one"])
        #expect(!a.hasJoinedGroup && !b.hasJoinedGroup)
        let joined = await onThread {
            pollUntil([a, b]) { a.hasJoinedGroup && b.hasJoinedGroup && a.assignment.count + b.assignment.count == 1 }
        }
        #expect(joined, "a=\(a.assignment) \(a.hasJoinedGroup) b=\(b.assignment) \(b.hasJoinedGroup)")
        #expect(a.memberID != nil && b.memberID != nil)
        await closeWhilePolling(a, others: [b])
        await onThread { b.close() }
    }
}
