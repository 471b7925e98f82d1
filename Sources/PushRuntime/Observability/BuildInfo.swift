import CPushAllocator
import CPushBuildInfo
import PushCrypto
import PushHTTP
import PushHTTPServer
import PushKafka
import PushRedis

/// What this binary is: its version, the commit it was built from, and the C libraries it runs
/// on (`pushworker version`, the `pushworker_build_info` gauge of `run` and `events`).
public enum BuildInfo {
    /// The release (semantic versioning): the first line of the repository's `VERSION` file,
    /// compiled in by CPushBuildInfo; "unknown" when the compiler could not read it. `VERSION`
    /// is the one place a release number is written (the chart's version, appVersion and default
    /// image tag and CHANGELOG.md follow it: `scripts/check_version.py`).
    public static let version: String = {
        let text = String(cString: pw_build_version())
        let line = text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }).first ?? ""
        let version = String(line.filter { $0 != " " && $0 != "\t" })
        return version.isEmpty ? "unknown" : version
    }()

    /// The git commit (12 hex digits, `-dirty` when the tree had changes) written at build time
    /// by `make` or the Dockerfile (`--build-arg GIT_COMMIT`); "unknown" for a plain
    /// `swift build` or a build without git.
    public static var commit: String { String(cString: pw_build_git_commit()) }

    /// The C libraries, name and version, as loaded at run time (hiredis: the headers' version,
    /// it has no run-time query).
    public static func libraries() -> [(name: String, version: String)] {
        let curl = LibcurlCheck.info()
        return [
            ("libcurl", curl.version),
            ("librdkafka", KafkaLibrary.version),
            ("openssl", OpenSSLLibrary.version),
            ("hiredis", HiredisLibrary.version),
            ("libmicrohttpd", MicroHTTPDLibrary.version),
            ("jemalloc", allocatorVersion),
        ]
    }

    /// The allocator's version (`5.3.0`: jemalloc's without its git suffix), "not in use" when
    /// malloc is not jemalloc's.
    static var allocatorVersion: String {
        guard let text = pw_allocator_version() else { return "not in use" }
        let version = String(cString: text)
        return version.split(separator: "-").first.map(String.init) ?? version
    }

    /// `pushworker version`: `pushworker 0.4.0 (commit a1b2c3d4e5f6)` then one line per library.
    public static func text() -> String {
        var lines = ["pushworker \(version) (commit \(commit))"]
        for library in libraries() {
            lines.append("  \(library.name.padding(toLength: 13, withPad: " ", startingAt: 0)) \(library.version)")
        }
        return lines.joined(separator: "\n")
    }

    /// The labels of `pushworker_build_info` (value 1): version, commit, libcurl, librdkafka,
    /// openssl.
    public static func metricLabels() -> [(String, String)] {
        let versions = Dictionary(libraries().map { ($0.name, $0.version) }, uniquingKeysWith: { first, _ in first })
        return [("version", version), ("commit", commit), ("libcurl", versions["libcurl"] ?? ""),
                ("librdkafka", versions["librdkafka"] ?? ""), ("openssl", versions["openssl"] ?? "")]
    }
}
