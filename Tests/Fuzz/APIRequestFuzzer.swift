// libFuzzer target `api-request` (scripts/fuzz-libfuzzer.sh; corpus Tests/Fuzz/corpus/api-request/).
//
// Input: a method line, a raw path line, then the body: what `pushworker api` takes from a
// request before it touches Redis or Kafka. The pure steps of APIService.handle run on it:
// APIRouting.resolve → CampaignJSON.action (campaign actions) or JobSubmission.check (jobs).
// Invariants (a violation traps):
// - a resolved campaign path holds a valid app id and a campaign id of 1…256 bytes;
// - a routing failure is 400, 404 or 405, and a 405 names methods other than the one refused;
// - a body is an action, or a 400/422 whose error body is JSON with its code;
// - accepted jobs decode as the worker decodes them, with the jobIds and recipients counted.
import Foundation
import PushAPI
import PushCore
import PushEncoding

private let now = Date(timeIntervalSince1970: 1_790_000_000)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAPIRequest(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: count))
    let lines = bytes.split(separator: 0x0A, maxSplits: 2, omittingEmptySubsequences: false)
    let method = String(decoding: lines[0], as: UTF8.self)
    let path = lines.count > 1 ? String(decoding: lines[1], as: UTF8.self) : "/"
    let body = lines.count > 2 ? Array(lines[2]) : []

    switch APIRouting.resolve(method: method, rawPath: path) {
    case .failure(let error):
        guard [400, 404, 405].contains(error.status) else { fatalError("routing answered \(error.status)") }
        if error.status == 405, let allow = error.headers.first(where: { $0.0 == "Allow" })?.1,
           allow.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == method }) {
            fatalError("405 for \(method), which \(allow) allows")
        }
        checkError(error)
    case .success(.campaignAction(let campaign, let verb)):
        checkPath(campaign)
        switch CampaignJSON.action(verb, body: body) {
        case .success(let action):
            if action.name != verb.rawValue { fatalError("\(verb) read as \(action.name)") }
        case .failure(let error):
            guard error.status == 400 || error.status == 422 else { fatalError("action body answered \(error.status)") }
            checkError(error)
        }
    case .success(.campaignStatus(let campaign)):
        checkPath(campaign)
    case .success(.submitJobs):
        switch JobSubmission.check(body, now: now) {
        case .success(let accepted):
            guard accepted.jobIDs.count == accepted.records.count, !accepted.records.isEmpty else { fatalError("jobs and records differ") }
            var recipients = 0
            for (jobID, record) in zip(accepted.jobIDs, accepted.records) {
                guard let job = try? JobDecoder.decode(record), job.jobID == jobID else { fatalError("an accepted job does not decode") }
                recipients += job.audience == nil ? job.recipients.count : 1
            }
            if recipients != accepted.recipients { fatalError("recipients counted \(accepted.recipients), decoded \(recipients)") }
            guard (try? JSONParser.parse(JobSubmission.acceptedJSON(accepted, topic: "push.jobs.v1")))?.objectValue != nil else {
                fatalError("the 202 body is not JSON")
            }
        case .failure(let error):
            guard error.status == 400 || error.status == 422 else { fatalError("jobs body answered \(error.status)") }
            checkError(error)
        }
    case .success:
        break
    }
    return 0
}

private func checkPath(_ campaign: CampaignPath) {
    guard JobDecoder.isValidAppID(campaign.appID), campaign.appID.utf8.count <= CampaignPath.maximumAppBytes,
          !campaign.campaignID.isEmpty, campaign.campaignID.utf8.count <= CampaignPath.maximumCampaignBytes else {
        fatalError("invalid campaign path accepted: \(campaign.appID) / \(campaign.campaignID)")
    }
}

private func checkError(_ error: APIError) {
    guard let object = (try? JSONParser.parse(error.json))?.objectValue?["error"]?.objectValue,
          object["code"]?.stringValue == error.code, object["message"]?.stringValue?.isEmpty == false else {
        fatalError("error body is not {\"error\": {\"code\", \"message\"}}")
    }
}
