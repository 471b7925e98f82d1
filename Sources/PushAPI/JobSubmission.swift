import Foundation
import PushCore
import PushEncoding

/// `POST /v1/jobs` (docs/reference/api.md "Jobs"): the body → the records to produce, or every
/// problem of every invalid job. Pure.
///
/// The body is one job object, or an array of 1…``maximumJobs`` jobs. Each job is checked as
/// `pushworker enqueue` checks a job (``JobInputCheck``: decoded with every problem listed,
/// relative `createdAt`/`expiresAt` such as `"+4h"` resolved, unknown fields and template
/// variables reported as warnings). One invalid job and nothing is produced: the answer lists
/// every problem with its JSON path, prefixed with the job's index for an array
/// (`$[2].recipients[3].token`).
public enum JobSubmission {
    /// Most jobs in one request.
    public static let maximumJobs = 10_000
    /// Most problems (and warnings) listed in one answer; the rest are counted.
    public static let maximumListed = 1000

    /// What to produce, keyed by jobId, in the order received.
    public struct Accepted: Sendable {
        public var jobIDs: [String]
        public var records: [[UInt8]]
        /// Each job's lane (docs/lanes.md): which topic it goes to.
        public var lanes: [JobLane] = []
        /// Recipients of all jobs (an audience job counts 1, as in `enqueue`).
        public var recipients: Int
        /// Remarks that do not stop a job (unknown fields, template variables without a value).
        public var warnings: [APIError.Problem]
    }

    public static func check(_ body: [UInt8], now: Date) -> Result<Accepted, APIError> {
        let parsed: JSONValue
        do { parsed = try JSONParser.parse(body, maxBytes: max(body.count, 1)) } catch {
            return .failure(.invalidJSON(error.description))
        }
        let documents: [(prefix: String, value: JSONValue)]
        switch parsed {
        case .object: documents = [("$", parsed)]
        case .array(let elements):
            guard !elements.isEmpty else { return .failure(.invalidField("$", "an empty array: no job")) }
            guard elements.count <= maximumJobs else {
                return .failure(.invalidField("$", "\(elements.count) jobs: at most \(maximumJobs) per request"))
            }
            documents = elements.enumerated().map { ("$[\($0.offset)]", $0.element) }
        default:
            return .failure(.invalidField("$", "expected a job object or an array of jobs, got \(parsed.typeName)"))
        }
        var accepted = Accepted(jobIDs: [], records: [], recipients: 0, warnings: [])
        var problems: [APIError.Problem] = []
        var omitted = 0
        var invalid = 0
        for (prefix, value) in documents {
            switch JobInputCheck.check(value, now: now, strict: false) {
            case .success(let checked):
                let job = checked.job
                accepted.jobIDs.append(job.jobID)
                accepted.lanes.append(job.lane)
                // The job as received (written compactly), or with its relative dates resolved.
                accepted.records.append((checked.resolvedDates.isEmpty ? value : job.document).jsonBytes())
                accepted.recipients += job.audience == nil ? job.recipients.count : 1
                for warning in checked.warnings where accepted.warnings.count < maximumListed {
                    accepted.warnings.append(.init(field: prefixed(warning.path, prefix), message: warning.moreCount > 0
                        ? "\(warning.message) (and \(warning.moreCount) more: \(prefixed(warning.pattern, prefix)))" : warning.message))
                }
            case .failure(let failure):
                invalid += 1
                omitted += failure.omitted
                for problem in failure.problems {
                    if problems.count < maximumListed {
                        problems.append(.init(field: prefixed(problem.path, prefix), message: problem.reason))
                    } else {
                        omitted += 1
                    }
                }
            }
        }
        guard invalid == 0 else { return .failure(.invalidJobs(problems, omitted: omitted, invalidJobs: invalid, of: documents.count)) }
        return .success(accepted)
    }

    /// `$.recipients[3]` of job `$[2]` → `$[2].recipients[3]`.
    static func prefixed(_ path: String, _ prefix: String) -> String {
        guard prefix != "$" else { return path }
        return path.hasPrefix("$") ? prefix + path.dropFirst() : prefix + "." + path
    }

    /// The 202 answer: `{"jobs": n, "recipients": n, "topic": "…", "jobIds": […], "warnings": [{"field","message"}]}`.
    public static func acceptedJSON(_ accepted: Accepted, topic: String) -> [UInt8] {
        JSONWriter.object(capacity: 128 + accepted.jobIDs.count * 40) { w in
            w.member("jobs", accepted.jobIDs.count)
            w.member("recipients", accepted.recipients)
            w.member("topic", topic)
            w.member("jobIds", strings: accepted.jobIDs)
            w.key("warnings")
            w.beginArray()
            for warning in accepted.warnings {
                w.beginObject()
                w.member("field", warning.field)
                w.member("message", warning.message)
                w.endObject()
            }
            w.endArray()
        }.bytes + [0x0A]
    }
}
