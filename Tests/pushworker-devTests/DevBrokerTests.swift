import Foundation
@testable import pushworker_dev
import PushTestSupport
import Testing

@Suite("pushworker-dev dev-broker")
struct DevBrokerTests {
    @Test("bad usage is rejected", arguments: [
        ["--brokers"], ["--brokers", "0"], ["--brokers", "x"], ["--topic", "a:0"], ["--topic", "a:b"],
        ["--topic", ""], ["--topic", "a b:1"], ["--bootstrap-file="], ["--what"], ["extra"],
    ])
    func badUsage(arguments: [String]) {
        #expect(throws: DevBrokerCommand.UsageError.self) { try DevBrokerCommand.parse(arguments) }
    }

    @Test("flags parse in both --flag value and --flag=value forms")
    func parsesFlags() throws {
        let options = try DevBrokerCommand.parse(["--bootstrap-file=/tmp/b", "--brokers", "3", "--topic", "push.jobs.v1:4", "--topic=x"]).options
        #expect(options.bootstrapFile == "/tmp/b")
        #expect(options.brokers == 3)
        #expect(options.topics.map(\.name) == ["push.jobs.v1", "x"])
        #expect(options.topics.map(\.partitions) == [4, 1])
        #expect(try DevBrokerCommand.parse(["--help"]).isHelp)
    }
}
