import PushCLI
import PushCore
import PushRuntime
import PushWorker
import PushEncoding

/// `pushworker version` and `pushworker --version` (docs/reference/cli.md).
enum VersionCommand {
    static let usage = """
    usage: pushworker version [--json]
           pushworker --version

    The version, the git commit the binary was built from ("unknown" for a plain `swift build`;
    `make` and the Dockerfile record it) and the C libraries loaded at run time (hiredis: the
    version built against, it has no run-time query). --json: one object
    {"version","commit","libraries":{"libcurl",…}}.
    """

    static func main(_ arguments: [String]) -> Int32 {
        var code: Int32 = 0
        guard let parsed = CommandSupport.parse(arguments, usage: usage, flags: ["json"], exitCode: &code) else { return code }
        guard parsed.positionals.isEmpty else { return CommandSupport.usageError("version takes no argument", usage: usage) }
        if parsed.flag("json") {
            CommandSupport.writeLine(JSONWriter.object { w in
                w.member("version", BuildInfo.version)
                w.member("commit", BuildInfo.commit)
                w.member("libraries") { libraries in
                    for library in BuildInfo.libraries() { libraries.member(library.name, library.version) }
                }
            }.text)
        } else {
            CommandSupport.writeLine(BuildInfo.text())
        }
        return ExitCode.ok
    }
}
