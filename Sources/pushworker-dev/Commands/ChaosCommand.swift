import Foundation
import PushRuntime
import PushCLI
import PushCore
import PushKafka
import PushWorker
import PushEvents
import PushDevTools
import PushChaos

/// `pushworker-dev chaos`: reliability drills against real processes (docs/reliability.md, `make chaos`).
enum ChaosCommand {
    static let usage = """
    usage: pushworker-dev chaos [--drill NAME|all]... [--scale F] [--seconds N] [--seed N] [--keep] [--quiet]

    Starts dev-broker, redis-server, the sandbox and `pushworker run` workers as processes, does
    harm mid-campaign and checks that nothing is lost (every recipient gets a final result).
    Prints one table row per check; exits 0 when every check passed, 1 otherwise.

    drills: \(ChaosDrills.names.joined(separator: ", ")) (default: all)
      --drill NAME   run only this drill (repeatable)
      --scale F      multiply campaign sizes (default 1)
      --seconds N    fuzz time budget (default 60)
      --seed N       fuzz and token seed (default 1)
      --keep         keep the temporary folders (logs, credentials)
      --quiet        no progress lines
    """

    static func main(_ arguments: [String]) -> Int32 {
        var code: Int32 = 0
        guard let parsed = CommandSupport.parse(arguments, usage: usage, values: ["drill", "scale", "seconds", "seed"],
                                                flags: ["keep", "quiet"], exitCode: &code) else { return code }
        guard var options = CommandSupport.usageChecked(usage, {
            var options = ChaosOptions(executable: ChildProcess.selfPath)
            options.scale = try parsed.double("scale", default: 1)
            options.fuzzSeconds = Double(try parsed.integer("seconds", default: 60, in: 1...86_400))
            options.seed = UInt64(try parsed.integer("seed", default: 1, in: 0...Int.max))
            return options
        }) else { return ExitCode.usage }
        guard options.scale > 0 && options.scale <= 10 else {
            _ = CommandSupport.usageError("--scale must be in (0, 10]", usage: usage)
            return ExitCode.usage
        }
        options.keep = parsed.flag("keep")
        options.verbose = !parsed.flag("quiet")
        var drills = parsed.allValues("drill")
        if drills.isEmpty || drills.contains("all") { drills = ChaosDrills.names }
        if let unknown = drills.first(where: { !ChaosDrills.names.contains($0) }) {
            let hint = Suggestion.closest(to: unknown, in: ChaosDrills.names + ["all"]).map { "did you mean '\($0)'?" }
                ?? "expected all or one of " + ChaosDrills.names.joined(separator: ", ")
            return CommandSupport.usageError("unknown drill '\(unknown)' (\(hint))", usage: usage)
        }
        KafkaLogging.setLogHandler { _, _, _ in }  // outages make librdkafka noisy; the table says what matters
        signal(SIGPIPE, SIG_IGN)

        var reports: [DrillReport] = []
        for name in drills {
            printError("▸ drill \(name)")
            let report = ChaosDrills.run(name, options)
            printError("  \(report.passed ? "PASS" : "FAIL") in \(String(format: "%.0f", report.seconds)) s")
            reports.append(report)
        }
        print(table(reports))
        return reports.allSatisfy(\.passed) ? ExitCode.ok : ExitCode.failure
    }

    /// A Markdown table: one row per check and per reported figure.
    static func table(_ reports: [DrillReport]) -> String {
        var lines = ["| drill | check / figure | value | result |", "|---|---|---|---|"]
        for report in reports {
            for check in report.checks {
                lines.append("| \(report.name) | \(check.what) | \(check.value) | \(check.ok ? "ok" : "**FAIL**") |")
            }
            for (what, value) in report.figures { lines.append("| \(report.name) | \(what) | \(value) | (figure) |") }
            lines.append("| \(report.name) | **drill** | \(String(format: "%.0f s", report.seconds)) | \(report.passed ? "**PASS**" : "**FAIL**") |")
        }
        let passed = reports.filter(\.passed).count
        lines.append("")
        lines.append("\(passed)/\(reports.count) drills passed — nothing lost means every recipient of every enqueued job has a final result on push.results.v1.")
        return lines.joined(separator: "\n")
    }
}
