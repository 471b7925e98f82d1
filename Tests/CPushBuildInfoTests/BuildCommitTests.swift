import CPushBuildInfo
import Foundation
import Testing

@Suite("CPushBuildInfo")
struct BuildCommitTests {
    /// `make` writes generated.h (scripts/write-build-info.sh); a plain `swift build` has none.
    @Test("the commit is 12 hex digits (-dirty when the tree had changes) or unknown")
    func commit() {
        let commit = String(cString: pw_build_git_commit())
        #expect(commit == "unknown" || commit.range(of: #"^[0-9a-f]{12}(-dirty)?$"#, options: .regularExpression) != nil, "\(commit)")
    }

    @Test("the version is the first line of VERSION")
    func version() throws {
        let text = String(cString: pw_build_version())
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let file = try String(contentsOf: root.appendingPathComponent("VERSION"), encoding: .utf8)
        #expect(text.split(separator: "\n").first.map(String.init) == file.split(separator: "\n").first.map(String.init))
    }
}
