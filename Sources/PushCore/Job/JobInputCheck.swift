import Foundation
import PushEncoding

/// How `render`, `send` and `enqueue` read a job document (docs/reference/cli.md): relative dates
/// resolved, decoded with every problem listed, linted (unknown fields, template variables),
/// and with `--strict` the warnings counted as errors. The worker never goes through here: it
/// decodes with ``JobDecoder`` alone, ignores unknown members and refuses relative dates.
public enum JobInputCheck {
    /// A job the command can use.
    public struct Checked: Sendable {
        public var job: FanOutJob
        /// The relative dates replaced; when there are any, `job.document` (not the input
        /// bytes) is what to produce.
        public var resolvedDates: [RelativeJobDates.Resolution]
        public var warnings: [JobWarning]
    }

    /// Why the document cannot be used: one line per problem (and per warning with `strict`).
    public struct Failure: Error, Sendable, Equatable {
        public var lines: [String]
        /// Problems of the job itself (exit 65 either way).
        public var problemCount: Int
        /// Warnings refused by `--strict`.
        public var refusedWarnings: Int
        /// The problems as path and reason (the HTTP API's `problems`), in the order of `lines`;
        /// warnings refused by `strict` included.
        public var problems: [JobProblem] = []
        /// Problems found beyond those kept (``JobValidationError/omitted``).
        public var omitted = 0
    }

    /// Parses, resolves relative dates (as of `now`), decodes and lints `bytes`.
    public static func check(_ bytes: some Collection<UInt8>, now: Date, strict: Bool) -> Result<Checked, Failure> {
        let document: JSONValue
        do { document = try JSONParser.parse(Array(bytes)) } catch {
            return .failure(Failure(lines: ["$: invalid JSON: \(error)"], problemCount: 1, refusedWarnings: 0,
                                    problems: [JobProblem(path: "$", reason: "invalid JSON: \(error)")]))
        }
        return check(document, now: now, strict: strict)
    }

    public static func check(_ parsed: JSONValue, now: Date, strict: Bool) -> Result<Checked, Failure> {
        let (document, resolutions) = RelativeJobDates.resolve(parsed, now: now)
        let job: FanOutJob?
        var lines: [String] = []
        var problems = 0
        var found: [JobProblem] = []
        var omitted = 0
        do throws(JobValidationError) { job = try JobDecoder.decode(document) } catch {
            job = nil
            lines = error.lines
            problems = error.problems.count + error.omitted
            found = error.problems
            omitted = error.omitted
        }
        let warnings = JobLint.warnings(document: document, job: job)
        if let job, !(strict && !warnings.isEmpty) {
            return .success(Checked(job: job, resolvedDates: resolutions, warnings: warnings))
        }
        if strict {
            lines += warnings.map { "\($0) (--strict)" }
            found += warnings.map { JobProblem(path: $0.path, reason: $0.message + " (strict)") }
        }
        return .failure(Failure(lines: lines, problemCount: problems, refusedWarnings: strict ? warnings.count : 0,
                                problems: found, omitted: omitted))
    }
}

/// Relative dates in hand-written jobs (the `examples/` folder), for the CLI only: `createdAt`
/// and `expiresAt` may be `"now"` or a signed offset from now — `"+4h"`, `"-10m"`, `"+90s"`,
/// `"+2d"`, also combined as `"+1h30m"` — and are replaced by the RFC 3339 instant before the
/// job is decoded, so a sample never goes stale. `render`, `send` and `enqueue` accept them
/// (`enqueue` produces the resolved date); the worker's decoder keeps refusing anything but
/// RFC 3339 (`$.expiresAt: not an RFC 3339 date-time`).
public enum RelativeJobDates {
    /// The members that may be relative.
    public static let fields: [JobField] = [.createdAt, .expiresAt]
    /// The members of `ios.liveActivity` that may be relative (docs/reference/job.md).
    public static let liveActivityFields: [LiveActivityField] = [.staleDate, .dismissalDate]

    /// One replaced member.
    public struct Resolution: Sendable, Equatable {
        public var field: String
        public var written: String
        public var resolved: String
    }

    /// `document` with its relative dates replaced (as of `now`, whole seconds, UTC), and what
    /// was replaced. Anything else — RFC 3339 text, other types, unreadable offsets — is left
    /// for the decoder to judge.
    public static func resolve(_ document: JSONValue, now: Date) -> (JSONValue, [Resolution]) {
        guard case .object(var root) = document else { return (document, []) }
        var resolutions: [Resolution] = []
        resolveMembers(&root, fields.map(\.rawValue), prefix: "", now: now, into: &resolutions)
        if case .object(var ios)? = root[JobField.ios.rawValue],
           case .object(var activity)? = ios[IOSField.liveActivity.rawValue] {
            let before = resolutions.count
            resolveMembers(&activity, liveActivityFields.map(\.rawValue), prefix: "ios.liveActivity.", now: now, into: &resolutions)
            if resolutions.count > before {
                ios[IOSField.liveActivity.rawValue] = .object(activity)
                root[JobField.ios.rawValue] = .object(ios)
            }
        }
        return resolutions.isEmpty ? (document, []) : (.object(root), resolutions)
    }

    private static func resolveMembers(_ object: inout JSONObject, _ names: [String], prefix: String, now: Date,
                                       into resolutions: inout [Resolution]) {
        for name in names {
            guard case .string(let text)? = object[name], let seconds = offsetSeconds(text) else { continue }
            let instant = Date(timeIntervalSince1970: (now.timeIntervalSince1970 + Double(seconds)).rounded(.down))
            let formatted = RFC3339Timestamp.format(instant)
            object[name] = .string(formatted)
            resolutions.append(Resolution(field: prefix + name, written: text, resolved: formatted))
        }
    }

    /// Seconds from now for `now`, `+4h`, `-10m`, `+1h30m`, `+2d`, `+90s`; nil for anything else.
    public static func offsetSeconds(_ text: String) -> Int? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed == "now" { return 0 }
        guard let sign = trimmed.first, sign == "+" || sign == "-" else { return nil }
        var total = 0
        var number: Int?
        var units = 0
        for character in trimmed.dropFirst() {
            if let digit = character.wholeNumberValue, character.isASCII {
                let (scaled, overflow1) = (number ?? 0).multipliedReportingOverflow(by: 10)
                let (next, overflow2) = scaled.addingReportingOverflow(digit)
                guard !overflow1, !overflow2, next <= 10_000_000 else { return nil }
                number = next
                continue
            }
            let unit: Int
            switch character {
            case "s": unit = 1
            case "m": unit = 60
            case "h": unit = 3600
            case "d": unit = 86_400
            default: return nil
            }
            guard let value = number else { return nil }
            total += value * unit
            number = nil
            units += 1
        }
        guard number == nil, units > 0, total <= 10 * 365 * 86_400 else { return nil }
        return sign == "-" ? -total : total
    }
}
