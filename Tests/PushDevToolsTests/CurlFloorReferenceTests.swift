import Foundation
import Testing
@testable import PushWorker
@testable import PushDevTools
import PushTestSupport

@Suite("libcurl floor reference (pushworker-curl-floor)")
struct CurlFloorReferenceTests {
    @Test("its one result line is parsed: succeeded, req/s and the libcurl version")
    func parse() {
        let line = "requests: 200 total, 198 succeeded, 9105 req/s, cpu 0.011 s, 55.10 us/request (libcurl/8.14.1 OpenSSL/3.0.19 nghttp2/1.52.0)\n"
        let parsed = CurlFloorReference.parse("request failed: Timeout was reached, status 0\n" + line)
        #expect(parsed.succeeded == 198)
        #expect(parsed.requestsPerSecond == 9105)
        #expect(parsed.version == "libcurl/8.14.1")
        let nothing = CurlFloorReference.parse("usage: pushworker-curl-floor …\n")
        #expect(nothing.succeeded == nil && nothing.requestsPerSecond == nil && nothing.version == nil)
    }

    @Test("bad command lines exit 64 with usage; an unreadable body file exits 66")
    func usage() throws {
        let binary = BuiltProducts.curlFloor
        try #require(FileManager.default.isExecutableFile(atPath: binary), "build the package first: \(binary)")
        let noURL = try runCommand(binary, ["-n", "10", "-d", "/dev/null"])
        #expect(noURL.status == 64)
        #expect(noURL.stderr.contains("usage: pushworker-curl-floor"))
        let zero = try runCommand(binary, ["-n", "0", "-d", "/dev/null", "https://127.0.0.1:1/"])
        #expect(zero.status == 64)
        let unknown = try runCommand(binary, ["-n", "1", "-x", "-d", "/dev/null", "https://127.0.0.1:1/"])
        #expect(unknown.status == 64)
        let missing = try runCommand(binary, ["-n", "1", "-d", "/nonexistent/body.json", "https://127.0.0.1:1/"])
        #expect(missing.status == 66)
        let badMode = try runCommand(binary, ["--mode", "fast", "-n", "1", "-d", "/dev/null", "https://127.0.0.1:1/"])
        #expect(badMode.status == 64)
        let badAPI = try runCommand(binary, ["--api", "select", "-n", "1", "-d", "/dev/null", "https://127.0.0.1:1/"])
        #expect(badAPI.status == 64)
    }

    @Test("a refused connection is a failed run (exit 1), reported, not a hang, in every mode", arguments: [
        ["--mode", "tuned"], ["--mode", "tuned", "--api", "perform"], ["--mode", "plain"],
    ])
    func refused(mode: [String]) throws {
        let body = FileManager.default.temporaryDirectory.appendingPathComponent("floor-body-\(UUID().uuidString).json")
        try Data("{}".utf8).write(to: body)
        defer { try? FileManager.default.removeItem(at: body) }
        let port = freeLoopbackPort()
        let run = try runCommand(BuiltProducts.curlFloor, mode + ["-n", "3", "-c", "1", "-m", "2", "-d", body.path, "https://127.0.0.1:\(port)/3/device/x"], timeout: 30)
        #expect(run.status == 1)
        #expect(CurlFloorReference.parse(run.stdout).succeeded == 0)
        #expect(run.stderr.contains("request failed"))
    }
}
