import Foundation
import PushCore
import PushKafka
import PushKafkaMock
@testable import PushTools
@testable import pushworker
import PushTestSupport
import Testing
@testable import PushWorker

/// The repository's topics/ folder.
let repositoryTopics: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.appendingPathComponent("topics").path
}()

@Suite("topics print and declarations")
struct TopicsCommandTests {
    @Test("the repository's declarations load, sorted, with their configs")
    func loadRepository() throws {
        let declared = try TopicDeclarations.load(directory: repositoryTopics)
        #expect(declared.map(\.name) == ["push.dlq.v1", "push.events.v1", "push.jobs.transactional.v1", "push.jobs.v1", "push.results.v1", "push.retry.v1", "push.tokens.v1"])
        let jobs = try #require(declared.first { $0.name == "push.jobs.v1" })
        #expect(jobs.partitions == 24)
        #expect(jobs.key == "jobId")
        #expect(jobs.configValue("retention.ms") == "604800000")
    }

    @Test("bad declaration files are rejected with the file and reason", arguments: [
        (#"{"partitions": 1, "replicationFactor": 1}"#, "name is required"),
        (#"{"name": "a b", "partitions": 1, "replicationFactor": 1}"#, "name must be"),
        (#"{"name": "t", "partitions": 0, "replicationFactor": 1}"#, "partitions must be"),
        (#"{"name": "t", "partitions": 1, "replicationFactor": 1, "config": {"x": []}}"#, "config.x must be"),
        (#"[1]"#, "expected an object"),
        (#"{"#, "invalid JSON"),
    ])
    func badFiles(_ text: String, _ reason: String) {
        #expect(throws: TopicDeclarationError.self) { try TopicDeclarations.parse(Array(text.utf8), file: "x.json") }
        do { _ = try TopicDeclarations.parse(Array(text.utf8), file: "x.json") } catch {
            #expect(error.description.hasPrefix("x.json: "))
            #expect(error.description.contains(reason))
        }
    }

    @Test("numbers and booleans in config become strings")
    func configScalars() throws {
        let d = try TopicDeclarations.parse(Array(#"{"name":"t","partitions":2,"replicationFactor":1,"config":{"retention.ms":1000,"x":true}}"#.utf8), file: "t.json")
        #expect(d.config == [KeyValue("retention.ms", "1000"), KeyValue("x", "true")])
    }

    @Test("the folder is --dir, else ./topics")
    func locate() throws {
        let folder = try TemporaryFolder.make(prefix: "topics-locate")
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(TopicDeclarations.locate("/explicit") == "/explicit")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("topics"), withIntermediateDirectories: true)
        #expect(TopicDeclarations.locate(nil, currentDirectory: folder.path) == folder.path + "/topics")
    }

    @Test("retention is shown in the largest whole unit", arguments: [
        ("604800000", "7d"), ("3600000", "1h"), ("90000", "90s"), ("1500", "1500ms"), ("-1", "forever"), ("abc", "abc"),
    ])
    func retention(_ ms: String, _ shown: String) {
        #expect(TopicsCommand.retention(ms) == shown)
    }

    @Test("print shows a table of every declared topic")
    func printTable() throws {
        let result = try runCommand(BuiltProducts.pushworker, ["topics", "print", "--dir", repositoryTopics])
        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 8)
        #expect(lines[0].hasPrefix("TOPIC"))
        let jobs = try #require(lines.first { $0.hasPrefix("push.jobs.v1 ") })
        #expect(jobs.split(separator: " ", omittingEmptySubsequences: true) == ["push.jobs.v1", "24", "3", "7d", "delete", "jobId",
                                                                              "PUSHWORKER_TOPIC_JOBS", "-"])
        #expect(result.stderr.contains("topics: declarations from \(repositoryTopics)"))
        #expect(lines.contains { $0.hasPrefix("push.tokens.v1 ") && $0.contains("compact") })
    }

    @Test("print --json is the declarations as a JSON array")
    func printJSON() throws {
        let result = try runCommand(BuiltProducts.pushworker, ["topics", "print", "--dir", repositoryTopics, "--json"])
        #expect(result.status == 0)
        let array = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
        #expect(array.count == 7)
        let jobs = try #require(array.first { $0["name"] as? String == "push.jobs.v1" })
        #expect(jobs["partitions"] as? Int == 24)
        #expect((jobs["config"] as? [String: String])?["cleanup.policy"] == "delete")
        #expect(jobs["valueSchema"] as? String == "schemas/job.v1.schema.json")
    }

    @Test("the declarations built into the binary are the repository's topics/ (run scripts/embed-topics.sh after editing topics/)")
    func embeddedMatchRepository() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: repositoryTopics).filter { $0.hasSuffix(".json") }.sorted()
        #expect(TopicDeclarations.embedded.map(\.file) == files)
        for (file, json) in TopicDeclarations.embedded {
            let text = try String(contentsOfFile: repositoryTopics + "/" + file, encoding: .utf8)
            #expect(json == text.trimmingCharacters(in: .newlines) || json + "\n" == text, "\(file) differs: run scripts/embed-topics.sh")
        }
        #expect(try TopicDeclarations.loadEmbedded() == TopicDeclarations.load(directory: repositoryTopics))
    }

    @Test("print works from any directory (built-in declarations) and shows the names the configuration uses")
    func printAnywhereWithConfiguredNames() throws {
        let folder = try TemporaryFolder.make(prefix: "topics-anywhere")
        defer { try? FileManager.default.removeItem(at: folder) }
        let process = try TestProcess(BuiltProducts.pushworker, ["topics", "print"], environment: CLITest.environment([
            "PUSHWORKER_TOPIC_JOBS": "staging.jobs", "PUSHWORKER_TOPIC_DLQ": "staging.dlq",
        ]), directory: folder)
        #expect(process.wait(timeout: 30) == 0, "\(process.stderr())")
        #expect(process.stderr().contains("topics: declarations from built into pushworker"))
        let lines = process.stdout().split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        #expect(lines.count == 8)
        #expect(lines.contains(["staging.jobs", "24", "3", "7d", "delete", "jobId", "PUSHWORKER_TOPIC_JOBS", "push.jobs.v1"]))
        #expect(lines.contains { $0.first == "staging.dlq" && $0.last == "push.dlq.v1" })
        #expect(lines.contains { $0.first == "push.results.v1" && $0.last == "-" })

        let json = try TestProcess(BuiltProducts.pushworker, ["topics", "print", "--json"], environment: CLITest.environment([
            "PUSHWORKER_TOPIC_JOBS": "staging.jobs",
        ]), directory: folder)
        #expect(json.wait(timeout: 30) == 0)
        let array = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout().utf8)) as? [[String: Any]])
        let jobs = try #require(array.first { $0["declaredName"] as? String == "push.jobs.v1" })
        #expect(jobs["name"] as? String == "staging.jobs")
        #expect(jobs["setting"] as? String == "PUSHWORKER_TOPIC_JOBS")
    }

    @Test("usage errors exit 64", arguments: [
        ["topics"], ["topics", "frobnicate", "--dir", repositoryTopics], ["topics", "print", "--dir", repositoryTopics, "--dry-run"],
        ["topics", "apply", "--dir", repositoryTopics, "--timeout", "0"], ["topics", "print", "--bogus"],
    ])
    func usage(_ arguments: [String]) throws {
        let result = try runCommand(BuiltProducts.pushworker, arguments)
        #expect(result.status == 64)
        #expect(result.stderr.contains("pushworker topics: "), "\(result.stderr)")
        #expect(result.stderr.hasSuffix("run 'pushworker topics --help' for usage\n"), "the hint, not the whole usage: \(result.stderr)")
    }

    @Test("a missing folder exits 66")
    func missingFolder() throws {
        let result = try runCommand(BuiltProducts.pushworker, ["topics", "print", "--dir", "/nonexistent-topics"])
        #expect(result.status == 66)
    }

    @Test("--help documents print and apply")
    func help() throws {
        let result = try runCommand(BuiltProducts.pushworker, ["topics", "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("--dry-run"))
        #expect(result.stdout.contains("never removes partitions") || result.stdout.contains("never"))
    }
}

@Suite("topics apply against librdkafka's mock cluster")
struct TopicsApplyMockTests {
    @Test("existing topics: refused quickly with a clear message (the mock has no DescribeConfigs)")
    func existingTopicsRefused() throws {
        let cluster = try KafkaMockCluster()
        defer { cluster.close() }
        try cluster.createTopic("push.jobs.v1", partitions: 2)
        let started = Date()
        let result = try runCommand(BuiltProducts.pushworker, ["topics", "apply", "--dir", repositoryTopics, "--timeout", "3"],
                                    environment: ["PUSHWORKER_KAFKA_BROKERS": cluster.bootstrapServers], timeout: 30)
        #expect(result.status == 69)
        #expect(result.stderr.contains("_UNSUPPORTED_FEATURE"))
        #expect(result.stderr.contains("mock cluster"))
        #expect(Date().timeIntervalSince(started) < 15)
    }

    @Test("missing topics: CreateTopics fails within the timeout, naming the action")
    func createTimesOut() throws {
        let cluster = try KafkaMockCluster()
        defer { cluster.close() }
        let folder = try TemporaryFolder.make(prefix: "topics-apply")
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data(#"{"name":"t.apply","partitions":2,"replicationFactor":1}"#.utf8).write(to: folder.appendingPathComponent("t.apply.json"))
        let started = Date()
        let result = try runCommand(BuiltProducts.pushworker, ["topics", "apply", "--dir", folder.path, "--timeout", "2"],
                                    environment: ["PUSHWORKER_KAFKA_BROKERS": cluster.bootstrapServers], timeout: 30)
        #expect(result.status == 69)
        #expect(result.stderr.contains("create t.apply partitions=2"))
        #expect(result.stderr.contains("_TIMED_OUT"))
        #expect(Date().timeIntervalSince(started) < 15)
    }

    @Test("--dry-run plans from metadata alone when nothing exists")
    func dryRun() throws {
        let cluster = try KafkaMockCluster()
        defer { cluster.close() }
        let result = try runCommand(BuiltProducts.pushworker, ["topics", "apply", "--dir", repositoryTopics, "--dry-run", "--replication-factor", "1"],
                                    environment: ["PUSHWORKER_KAFKA_BROKERS": cluster.bootstrapServers, "PUSHWORKER_TOPIC_JOBS": "staging.jobs"], timeout: 30)
        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 7)
        #expect(lines.allSatisfy { $0.hasPrefix("would create ") && $0.contains("replicationFactor=1") })
        #expect(lines.contains { $0.hasPrefix("would create staging.jobs partitions=24") })
    }

    @Test("a broker that is down: exit 69 in bounded time")
    func brokerDown() throws {
        let port = freeLoopbackPort()
        let started = Date()
        let result = try runCommand(BuiltProducts.pushworker, ["topics", "apply", "--dir", repositoryTopics, "--timeout", "2"],
                                    environment: ["PUSHWORKER_KAFKA_BROKERS": "127.0.0.1:\(port)"], timeout: 30)
        #expect(result.status == 69)
        #expect(result.stderr.contains("cannot read the topics of 127.0.0.1:\(port)"))
        #expect(Date().timeIntervalSince(started) < 15)
    }
}
