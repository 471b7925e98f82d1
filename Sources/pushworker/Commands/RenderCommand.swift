import Foundation
import PushRuntime
import PushCLI
import PushCore
import PushCrypto
import PushWorker
import PushEncoding
import PushProviders

/// `pushworker render [FILE|-]` (docs/reference/cli.md `render`): prints the exact provider request of
/// every recipient as one JSON line, without sending anything.
enum RenderCommand {
    static let usage = """
    usage: pushworker render [FILE|-] [--strict]

    Dry run: decodes and validates one job (a file, or standard input) and prints one JSON line
    per recipient: {"subscriptionId","platform","language","msgId","status","reason",
    "payloadBytes","truncated","request"} (payloadBytes: the body's size, for Web Push the
    plaintext's, for Huawei the body's without the tokens; truncated: the texts cut to fit the
    budget). A Huawei line also has "batch": {"id","size"}, and its request is the batch's
    (up to 1000 tokens sharing one payload), the same on every line of the batch. A job with an
    audience (an FCM topic or condition, docs/reference/job.md) prints one line: subscriptionId is the
    topic or condition. In a job with quiet hours or sendAtLocal (or an app default of
    PUSHWORKER_QUIET_HOURS), a line has "deferral": null when sent at once, or status "deferred"
    with "deferral": {"reason","until"}; a bad recipient timezone is rejected/bad_timezone, a
    wait past expiresAt or sendBy is expired (docs/local-time.md).
    Every problem of an invalid job is listed on stderr; unknown fields and template variables
    without a value or default are warnings on stderr (--strict: errors, exit 65).
    createdAt/expiresAt may be relative ("now", "+4h", "-10m": examples/README.md).
    Uses PUSHWORKER_CREDENTIALS_DIR when set (apps without credentials for a platform are
    rejected/no_credentials), else production endpoints with <unknown> placeholders.
    Authorization headers are redacted; Web Push bodies show the plaintext and encryptedBytes.
    Exit 0 once every recipient has a line; 65 when the job itself is invalid.
    """

    static func main(_ arguments: [String]) -> Int32 {
        var code: Int32 = 0
        guard let parsed = CommandSupport.parse(arguments, usage: usage, flags: ["strict"], exitCode: &code) else { return code }
        guard parsed.positionals.count <= 1 else { return CommandSupport.usageError("one input at most", usage: usage) }
        let environment = ProcessInfo.processInfo.environment
        // A dry run needs no real msgId key: without one, ids are signed with an ephemeral key.
        let hasKeys = !(environment["PUSHWORKER_MSGID_KEYS"] ?? "").trimmingCharacters(in: .whitespaces).isEmpty
        let configuration: Configuration?
        do {
            configuration = try Configuration.load(environment: environment,
                                                   overrides: hasKeys ? [:] : ["PUSHWORKER_MSGID_KEYS": CommandSupport.ephemeralKeySpecification()],
                                                   purpose: .render)
        } catch {
            if hasKeys || environment["PUSHWORKER_CREDENTIALS_DIR"] != nil || !(environment["PUSHWORKER_QUIET_HOURS"] ?? "").isEmpty {
                printError("configuration problems:\n\(error)")
                return ExitCode.config
            }
            configuration = nil
        }
        let now = Date()
        let job: FanOutJob
        switch CommandSupport.readJob(parsed.positionals.first, command: "pushworker render", strict: parsed.flag("strict"), now: now) {
        case .success(let decoded): job = decoded
        case .failure(let exit): return exit.code
        }
        guard let keyring = CommandSupport.keyring(configuration) else { return ExitCode.software }
        let planner = JobPlanner(keyring: keyring, webPushPolicy: WebPushPolicy(extraAllowedHosts: configuration?.webPushAllowedHosts ?? []))
        let profile: AppProfile?
        if let directory = configuration?.credentialsDir {
            profile = CredentialsStore(directory: directory).credentials(for: job.appID)?.profile
        } else {
            profile = .placeholder
        }
        // A certificate app sends no authorization header (docs/providers.md): the TLS client certificate authenticates.
        let apnsAuthentication = profile?.apns?.authentication ?? .token
        let plans = planner.plan(job, profile: profile, now: now)
        let batches = batchesByPosition(plans)
        // The worker's own rule (docs/local-time.md), at the same instant for every recipient.
        var local = LocalTimeRules.of(job, defaults: configuration?.quietHours ?? [:])
            .map { LocalTimeCheck(rules: $0, job: job, now: now.timeIntervalSince1970) }
        for (position, plan) in plans.enumerated() {
            var decision: LocalDecision?
            if case .ready = plan.state, local != nil { decision = local!.decision(timezone: plan.recipient.timezone) }
            CommandSupport.writeLine(line(plan, apnsAuthentication: apnsAuthentication, batch: batches[position], local: decision))
        }
        return ExitCode.ok
    }

    /// A Huawei recipient's batch (docs/providers.md): its number in the job (from 1), and its tokens.
    struct Batch {
        var id: Int
        var tokens: [String]
    }

    /// The Huawei batches as the worker forms them, by plan position.
    static func batchesByPosition(_ plans: [PlannedRecipient]) -> [Int: Batch] {
        var batches: [Int: Batch] = [:]
        for (number, positions) in JobPlanner.hmsBatches(plans).enumerated() {
            let tokens: [String] = positions.compactMap { position in
                guard case .ready(let request) = plans[position].state else { return nil }
                return request.hmsToken
            }
            for position in positions { batches[position] = Batch(id: number + 1, tokens: tokens) }
        }
        return batches
    }

    /// One recipient's line. `local`: the local-time decision of a ready recipient in a job with
    /// local-time rules (docs/local-time.md); such a line has `"deferral"`: null when it is sent
    /// at once, `{"reason","until"}` when it is deferred (status `deferred`); a bad zone or a wait
    /// past the deadline makes it `rejected`/`expired` without a request.
    static func line(_ plan: PlannedRecipient, apnsAuthentication: AppProfile.APNS.Authentication = .token, batch: Batch? = nil,
                     local: LocalDecision? = nil) -> String {
        JSONWriter.object { w in
            w.member("subscriptionId", plan.recipient.subscriptionID)
            w.member("platform", plan.platform)
            w.member("language", orNull: plan.language)
            w.member("msgId", orNull: plan.msgID)
            switch (plan.state, local) {
            case (.expired, _):
                writeFinal(status: "expired", reason: ExpiryReason.expiresAtPassed.rawValue, to: &w)
            case (.rejected(let reason), _):
                writeFinal(status: "rejected", reason: reason, to: &w)
            case (.ready, .badTimezone?):
                writeFinal(status: "rejected", reason: "bad_timezone", to: &w)
            case (.ready, .expired(let reason)?):
                writeFinal(status: "expired", reason: reason.rawValue, to: &w)
            case (.ready(let request), _):
                if case .deferred(let until, let reason) = local {
                    w.member("status", "deferred")
                    w.member("deferral") { d in d.member("reason", reason.rawValue); d.member("until", RFC3339Timestamp.format(until)) }
                } else {
                    w.member("status", "ready")
                    if local != nil { w.key("deferral"); w.null() }
                }
                w.member("reason", orNull: nil)
                w.member("payloadBytes", request.body.count)
                w.member("truncated", strings: request.truncatedFields)
                if let batch {
                    w.member("batch") { b in b.member("id", batch.id); b.member("size", batch.tokens.count) }
                }
                w.key("request"); writeRequest(request, apnsAuthentication: apnsAuthentication, batchTokens: batch?.tokens, to: &w)
            }
        }.text
    }

    /// The members of a line without a request: `status`, `reason` and nulls.
    private static func writeFinal(status: String, reason: String, to w: inout JSONWriter) {
        w.member("status", status)
        w.member("reason", reason)
        w.key("payloadBytes"); w.null()
        w.key("truncated"); w.null()
        w.key("request"); w.null()
    }

    static func writeRequest(_ request: ProviderRequest, apnsAuthentication: AppProfile.APNS.Authentication = .token,
                             batchTokens: [String]? = nil, to w: inout JSONWriter) {
        // As sent: the shared headers, the recipient's own (its replace key), the transport's.
        var headers = request.allHeaders
        switch request.platform {
        case .ios: if apnsAuthentication == .token { headers.append(KeyValue("authorization", "bearer <redacted>")) }
        case .android, .huawei: headers.append(KeyValue("authorization", "Bearer <redacted>"))
        case .web:
            headers.append(KeyValue("authorization", "vapid t=<redacted>, k=<redacted>"))
            headers.append(KeyValue("content-encoding", "aes128gcm"))
        }
        w.beginObject()
        w.member("method", request.method)
        w.member("url", request.url)
        w.member("headers") { h in
            for header in headers { h.member(header.key, header.value) }
        }
        w.key("body")
        if request.platform == .web {
            w.beginObject()
            w.key("plaintext"); w.raw(request.body)
            w.member("encryptedBytes", WebPushEncryption.encryptedLength(plaintextCount: request.body.count))
            w.endObject()
        } else if request.platform == .huawei {
            // The batch's request: the shared body with its tokens (or this recipient's alone).
            let tokens = batchTokens ?? request.hmsToken.map { [$0] } ?? []
            w.raw(HMSBatching.body(shared: request.body, tokens: tokens) ?? request.body)
        } else {
            w.raw(request.body)
        }
        w.endObject()
    }
}
