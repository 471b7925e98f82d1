// libFuzzer target `provider-answers` (scripts/fuzz-libfuzzer.sh; corpus Tests/Fuzz/corpus/provider-answers/).
//
// Input: `STATUS\nRETRY-AFTER\nBODY`: the HTTP status (a first line that is not a number in
// 100…599 picks one of the statuses providers answer), the `Retry-After` value (absent without a
// second line) and the body (APNs, FCM and Huawei JSON). Every classifier reads the answer
// (APNs, FCM, Web Push, Huawei per request and per batch of three tokens), then the metric label
// and the diagnosis. Invariants (a violation traps):
// - a Retry-After delay is finite and ≥ 0;
// - a Huawei batch verdict has one outcome per token;
// - the metric label of any reason is "" (no reason, or an empty one), "other", or the reason
//   itself when it is in a fixed set;
// - APNs 200 is sent.
import PushCore
import PushProviders

private let statuses = [200, 201, 400, 401, 403, 404, 410, 413, 429, 500, 502, 503]
private let now = 1_790_000_000.0
private let tokens = ["t0", "t1", "t2"]

private func checkDelay(_ seconds: Double?, _ what: String) {
    if let seconds, !(seconds.isFinite && seconds >= 0) { fatalError("\(what): Retry-After delay \(seconds)") }
}

private func check(_ outcome: ProviderOutcome, _ platform: Platform) {
    if case .retry(_, let seconds, _) = outcome { checkDelay(seconds, "\(platform)") }
    let label = MetricLabels.reason(outcome.reason, platform: platform)
    guard label == "" || label == "other" || label == outcome.reason else { fatalError("label \(label) for \(outcome)") }
    if !label.isEmpty, label == outcome.reason, !(MetricLabels.ours.contains(label) || MetricLabels.httpStatusReasons.contains(label)
                                  || MetricLabels.apns.contains(label) || MetricLabels.fcm.contains(label) || MetricLabels.hms.contains(label)) {
        fatalError("label \(label) is in no fixed set")
    }
    _ = DeliveryDiagnosis.hint(platform: platform, status: outcome.finalStatus, reason: outcome.reason, httpStatus: nil, detail: outcome.reason)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzProviderAnswers(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let input = UnsafeBufferPointer(start: data, count: count)
    let firstBreak = input.firstIndex(of: 0x0A) ?? count
    let secondBreak = firstBreak < count ? input[(firstBreak + 1)...].firstIndex(of: 0x0A) ?? count : count
    let statusLine = String(decoding: input[..<firstBreak], as: UTF8.self)
    let status = Int(statusLine).flatMap { (100...599).contains($0) ? $0 : nil }
        ?? statuses[Int(input.first ?? 0) % statuses.count]
    let retryAfter = firstBreak < count ? String(decoding: input[(firstBreak + 1)..<secondBreak], as: UTF8.self) : nil
    let body = secondBreak < count ? Array(input[(secondBreak + 1)...]) : []
    let header: (String) -> String? = { name in
        switch name {
        case "retry-after": retryAfter
        case "apns-id": "00000000-0000-0000-0000-000000000001"
        case "location": "https://push.example/m/1"
        default: nil
        }
    }

    checkDelay(RetryAfter.seconds(retryAfter, nowUnix: now), "Retry-After")
    checkDelay(RetryAfter.seconds(String(decoding: input, as: UTF8.self), nowUnix: now), "input")
    for platform in Platform.allCases {
        let outcome = ResponseClassifier.classify(platform: platform, status: status, header: header, body: body, nowUnix: now)
        check(outcome, platform)
        if platform == .ios, status == 200, outcome != .sent(providerMessageID: header("apns-id")) { fatalError("APNs 200 is \(outcome)") }
    }
    switch HMSResponseClassifier.classify(status: status, header: header, body: body, tokens: tokens, nowUnix: now) {
    case .outcomes(let outcomes):
        if outcomes.count != tokens.count { fatalError("\(outcomes.count) outcomes for \(tokens.count) tokens") }
        for outcome in outcomes { check(outcome, .huawei) }
    case .split(let reason):
        if reason != HMSResponseClassifier.tooManyTokens { fatalError("split for \(reason)") }
    }
    return 0
}
