import Foundation
import PushAPI
import PushCore
import PushEncoding
import Testing

/// ``JobSubmission``: the `POST /v1/jobs` body checked as `pushworker enqueue` checks a job.
@Suite("API job submission")
struct JobSubmissionTests {
    static let token = "94a123a49f1f3a4ceac27050e47aeff4325e5b67ee0d2e575090e9f8d69bdfa3"

    static func job(_ id: String = "order:0001", app: String = "app_demo", expires: String = "+1d", recipients: String? = nil,
                    extra: String = "") -> String {
        let list = recipients ?? #"[{"subscriptionId": "s1", "platform": "ios", "token": "\#(token)"}, {"subscriptionId": "s2", "platform": "ios", "token": "\#(token)"}]"#
        return #"{"schemaVersion": 1, "jobId": "\#(id)", "appId": "\#(app)", "campaignId": "order", "expiresAt": "\#(expires)", \#(extra)"content": {"defaultLanguage": "en", "languages": {"en": {"title": "Hi", "body": "There"}}}, "recipients": \#(list)}"#
    }

    static let now = Date(timeIntervalSince1970: 1_777_650_000)

    static func check(_ body: String) -> Result<JobSubmission.Accepted, APIError> {
        JobSubmission.check(Array(body.utf8), now: now)
    }

    @Test("one job: accepted, relative dates resolved as enqueue resolves them, produced compact")
    func oneJob() throws {
        let accepted = try Self.check(Self.job()).get()
        #expect(accepted.jobIDs == ["order:0001"])
        #expect(accepted.recipients == 2)
        #expect(accepted.warnings.isEmpty)
        let produced = try #require(JSONParser.parse(accepted.records[0]).objectValue)
        #expect(produced["expiresAt"]?.stringValue == "2026-05-02T15:40:00Z")
        #expect(produced["recipients"]?.arrayValue?.count == 2)
        #expect(try JobDecoder.decode(accepted.records[0]).jobID == "order:0001", "what is produced is what the worker reads")
    }

    @Test("an array of jobs: every one accepted in order; warnings name the job")
    func array() throws {
        let body = "[\(Self.job("a:1")), \(Self.job("a:2", expires: "2030-01-01T00:00:00Z", extra: #""titel": "x", "#))]"
        let accepted = try Self.check(body).get()
        #expect(accepted.jobIDs == ["a:1", "a:2"])
        #expect(accepted.recipients == 4)
        #expect(accepted.records.count == 2)
        #expect(accepted.warnings.map(\.field) == ["$[1].titel"])
        #expect(accepted.warnings.first?.message.contains("unknown field") == true)
        // A job without relative dates goes out as received (members in order), written compactly.
        #expect(String(decoding: accepted.records[1], as: UTF8.self).hasPrefix(#"{"schemaVersion":1,"jobId":"a:2","appId":"app_demo""#))

        let json = try #require(JSONParser.parse(JobSubmission.acceptedJSON(accepted, topic: "push.jobs.v1")).objectValue)
        #expect(json.keys == ["jobs", "recipients", "topic", "jobIds", "warnings"])
        #expect(json["jobs"]?.numberValue == 2 && json["recipients"]?.numberValue == 4 && json["topic"]?.stringValue == "push.jobs.v1")
        #expect(json["warnings"]?.arrayValue?.first?.objectValue?["field"]?.stringValue == "$[1].titel")
    }

    @Test("invalid jobs: 422 invalid_job with every problem at its JSON path, prefixed by the job's index in an array")
    func problems() throws {
        // A recipient with a bad token is not a job problem (as with enqueue, it is rejected alone
        // at delivery); a recipient that is not an object is.
        let badRecipients = #"[{"subscriptionId": "s1", "platform": "ios", "token": "zz"}, 5, {"subscriptionId": "s3", "platform": "fax"}, "x"]"#
        guard case .failure(let single) = Self.check(Self.job(recipients: badRecipients, extra: #""priority": "urgent", "#)) else {
            Issue.record("accepted"); return
        }
        #expect(single.status == 422 && single.code == "invalid_job")
        #expect(single.problems.map(\.field) == ["$.priority", "$.recipients[1]", "$.recipients[3]"], "\(single.problems)")
        #expect(single.field == "$.priority")

        let body = "[\(Self.job("ok:1")), \(Self.job("bad:1", app: "..")), \(Self.job("bad:2", expires: "soon"))]"
        guard case .failure(let many) = Self.check(body) else { Issue.record("accepted"); return }
        #expect(many.problems.map(\.field) == ["$[1].appId", "$[2].expiresAt"], "\(many.problems)")
        #expect(many.message.hasPrefix("2 of 3 jobs invalid, 2 problems; nothing was produced"))
        let json = try #require(JSONParser.parse(many.json).objectValue?["error"]?.objectValue)
        #expect(json["problems"]?.arrayValue?.count == 2)
        #expect(json["field"]?.stringValue == "$[1].appId")
    }

    @Test("bodies that are not jobs", arguments: [
        ("", 400, "invalid_json", nil), ("{", 400, "invalid_json", nil), ("[]", 422, "invalid_field", "$"), ("42", 422, "invalid_field", "$"),
        ("\"job\"", 422, "invalid_field", "$"), ("null", 422, "invalid_field", "$"), ("[1]", 422, "invalid_job", "$[0]"),
        ("{}", 422, "invalid_job", "$.schemaVersion"), ("[{}, null]", 422, "invalid_job", "$[0].schemaVersion"),
        ("\u{FEFF}{}", 400, "invalid_json", nil), ("{\"a\":1,\"a\":2}", 400, "invalid_json", nil),
    ] as [(String, Int, String, String?)])
    func notJobs(body: String, status: Int, code: String, field: String?) {
        guard case .failure(let error) = Self.check(body) else { Issue.record("accepted \(body)"); return }
        #expect(error.status == status && error.code == code, "\(body): \(error.code) \(error.message)")
        #expect(error.field == field)
    }

    @Test("limits: at most 10000 jobs per request; at most 1000 problems listed, the rest counted; deep nesting refused")
    func limits() throws {
        let many = "[" + Array(repeating: "{}", count: JobSubmission.maximumJobs + 1).joined(separator: ",") + "]"
        guard case .failure(let tooMany) = Self.check(many) else { Issue.record("accepted"); return }
        #expect(tooMany.code == "invalid_field" && tooMany.message.contains("at most 10000"))

        let invalid = "[" + Array(repeating: "{}", count: 2000).joined(separator: ",") + "]"
        guard case .failure(let listed) = Self.check(invalid) else { Issue.record("accepted"); return }
        #expect(listed.problems.count == JobSubmission.maximumListed)
        #expect(listed.message.contains("2000 of 2000 jobs invalid") && listed.message.contains("more problems not listed"))

        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        guard case .failure(let nested) = Self.check(deep) else { Issue.record("accepted"); return }
        #expect(nested.code == "invalid_json")
    }
}
