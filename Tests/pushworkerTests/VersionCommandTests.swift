import Foundation
import PushRuntime
import PushTestSupport
import PushWorker
import Testing

@Suite("pushworker version")
struct VersionCommandTests {
    @Test("version and --version: the version, the commit, the C libraries; --json")
    func version() throws {
        for arguments in [["version"], ["--version"]] {
            let result = try runCommand(BuiltProducts.pushworker, arguments)
            #expect(result.status == 0)
            let lines = result.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix("pushworker \(BuildInfo.version) (commit ") == true)
            for library in ["libcurl", "librdkafka", "openssl", "hiredis", "libmicrohttpd", "jemalloc"] {
                #expect(lines.contains { $0.trimmingCharacters(in: .whitespaces).hasPrefix(library + " ") }, "\(library) in \(lines)")
            }
        }
        let json = try runCommand(BuiltProducts.pushworker, ["version", "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["version"] as? String == BuildInfo.version)
        let commit = try #require(object["commit"] as? String)
        #expect(commit == "unknown" || commit.range(of: #"^[0-9a-f]{12}(-dirty)?$"#, options: .regularExpression) != nil, "\(commit)")
        let libraries = try #require(object["libraries"] as? [String: String])
        #expect(libraries["librdkafka"] == "2.0.2")
        #expect(libraries["libcurl"]?.hasPrefix("8.") == true)
        #expect(libraries["jemalloc"]?.hasPrefix("5.") == true, "the binary's malloc is jemalloc's")
        #expect(try runCommand(BuiltProducts.pushworker, ["version", "extra"]).status == 64)
    }

    @Test("the version is the repository's VERSION file")
    func versionFile() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("VERSION"), encoding: .utf8)
        #expect(BuildInfo.version == text.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
