import Foundation
import PushKafka
import PushTestSupport
import Testing

@Suite("pushworker-dev dev-broker process")
struct DevBrokerProcessTests {
    @Test("the process exits 64 on bad usage and 0 with usage on --help")
    func processUsage() throws {
        let bad = try runCommand(BuiltProducts.pushworkerDev, ["dev-broker", "--brokers", "nope"])
        #expect(bad.status == 64)
        #expect(bad.stderr == "pushworker-dev dev-broker: --brokers must be 1...16, got 'nope'\nrun 'pushworker-dev dev-broker --help' for usage\n",
                "\(bad.stderr)")
        let help = try runCommand(BuiltProducts.pushworkerDev, ["dev-broker", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("--bootstrap-file"))
    }

    @Test("the standalone broker serves another process's clients and stops on SIGTERM")
    func standaloneBroker() async throws {
        let folder = try TemporaryFolder.make(prefix: "dev-broker")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("bootstrap").path
        let broker = try TestProcess(BuiltProducts.pushworkerDev, ["dev-broker", "--bootstrap-file", file, "--topic", "push.jobs.v1:2"])
        #expect(eventually(timeout: 10) { FileManager.default.fileExists(atPath: file) }, "\(broker.stderr())")
        let bootstrap = try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(bootstrap.hasPrefix("127.0.0.1:"))
        #expect(eventually(timeout: 5) { broker.stdout().contains(bootstrap) })

        let producer = try KafkaProducer(properties: ["bootstrap.servers": bootstrap])
        let report = try await producer.produce(topic: "push.jobs.v1", key: Array("job".utf8), value: Array("hello".utf8))
        producer.close(timeout: .seconds(1))
        let consumer = try KafkaConsumer(properties: consumerProperties(bootstrap, group: unique("g")), topics: ["push.jobs.v1"])
        let (messages, _) = await onThread { consume(consumer, count: 1) }
        #expect(messages.first?.partition == report.partition)
        #expect(messages.first.map { String(decoding: $0.value, as: UTF8.self) } == "hello")
        await onThread { consumer.close() }

        broker.signal(SIGTERM)
        #expect(broker.wait(timeout: 10) == 0)
        #expect(!FileManager.default.fileExists(atPath: file))
    }
}
