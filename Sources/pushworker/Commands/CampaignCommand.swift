import Foundation
import PushAPI
import PushCLI
import PushCore
import PushEncoding
import PushRedis
import PushRuntime

/// `pushworker campaign` (docs/reference/cli.md, docs/campaigns.md): campaign control from the
/// command line, straight to Redis (the same controls as the HTTP API).
enum CampaignCommand {
    static let usage = """
    usage: pushworker campaign status APP CAMPAIGN [--json]
           pushworker campaign pause APP CAMPAIGN [--reason TEXT] [--json]
           pushworker campaign resume APP CAMPAIGN [--json]
           pushworker campaign cancel APP CAMPAIGN [--reason TEXT] [--json]
           pushworker campaign throttle APP CAMPAIGN PER_MINUTE|off [--json]
           pushworker campaign deadline APP CAMPAIGN RFC3339|off [--json]

    Steers one campaign (APP: its appId, CAMPAIGN: its campaignId) across the whole fleet,
    through the controls in PUSHWORKER_REDIS_URL that every worker reads before each claim
    batch (docs/campaigns.md). Put `--` before a CAMPAIGN that starts with `-`.

    status    the state (active, paused, cancelled) and why, the final results by status, the
              sends of the last minute, the throttle, the deadline and the guardrail
              (PUSHWORKER_GUARD_INVALID_SHARE, PUSHWORKER_GUARD_MIN_SENDS: whether it tripped)
    pause     no new send anywhere; queued work waits until resume
    resume    sending goes on (a campaign the guardrail paused is released from it)
    cancel    no new send, ever: recipients not sent yet get the final status cancelled
              (final while the control lives: 7 days after its last change)
    throttle  sends per minute across the fleet (wins over the jobs' throttlePerMinute);
              off removes it
    deadline  recipients not sent by then are expired (wins over the jobs' sendBy); an
              RFC 3339 date-time, or +30m / +4h / +2d from now; off removes it

    Every command but status prints the status after the change.
      --reason TEXT  why (pause, cancel; at most 1024 bytes), shown by status
      --json         print the status as the HTTP API's JSON (GET /v1/campaigns/{app}/{campaign})

    Exit 0 done, 1 refused (the campaign is cancelled: only cancel is accepted), 64 usage,
    69 Redis unavailable, 78 configuration.
    """

    static let verbs = ["status", "pause", "resume", "cancel", "throttle", "deadline"]

    static func main(_ arguments: [String]) -> Int32 {
        var code: Int32 = 0
        guard let parsed = CommandSupport.parse(arguments, usage: usage, values: ["reason"], flags: ["json"], exitCode: &code) else { return code }
        guard let verb = parsed.positionals.first else { return CommandSupport.usageError("expected \(verbs.joined(separator: ", "))", usage: usage) }
        guard verbs.contains(verb) else { return CommandSupport.unknownSubcommand(verb, among: verbs, usage: usage) }
        let request: Request
        switch Request.parse(verb: verb, positionals: Array(parsed.positionals.dropFirst()), reason: parsed.value("reason")) {
        case .success(let value): request = value
        case .failure(let error): return CommandSupport.usageError(error.message, usage: usage)
        }
        guard let configuration = CommandSupport.configuration(.campaign) else { return ExitCode.config }
        let client: any RedisPipelining
        do { client = try configuration.redisClient() } catch {
            printError("error: PUSHWORKER_REDIS_URL: \(error)")
            return ExitCode.config
        }
        defer { client.close() }
        let store = DeliveryStateStore(client: client, guardSettings: CampaignGuard(invalidShare: configuration.guardInvalidShare,
                                                                                    minSends: configuration.guardMinSends))
        do {
            if let action = request.action { _ = try store.apply(action, appID: request.path.appID, campaignID: request.path.campaignID) }
            let status = try store.status(appID: request.path.appID, campaignID: request.path.campaignID)
            if parsed.flag("json") {
                CommandSupport.writeOut(String(decoding: CampaignJSON.status(status), as: UTF8.self))
            } else {
                for line in CampaignText.lines(status) { CommandSupport.writeLine(line) }
            }
            return ExitCode.ok
        } catch let error as CampaignActionError {
            printError("error: \(error.description)")
            return error == .cancelled ? ExitCode.failure : ExitCode.usage
        } catch let error as RedisError {
            printError("error: \(error.description)")
            return error.isConnectionError ? ExitCode.unavailable : ExitCode.software
        } catch {
            printError("error: \(error)")
            return ExitCode.software
        }
    }

    /// What the arguments ask for; parsed before anything is contacted.
    struct Request: Equatable {
        var path: CampaignPath
        /// nil for `status`.
        var action: CampaignAction?

        struct Problem: Error, Equatable { var message: String }

        static func parse(verb: String, positionals: [String], reason: String?, now: Date = Date()) -> Result<Request, Problem> {
            let takesValue = verb == "throttle" || verb == "deadline"
            let expected = takesValue ? 3 : 2
            guard positionals.count == expected else {
                let shape = takesValue ? "APP CAMPAIGN \(verb == "throttle" ? "PER_MINUTE|off" : "RFC3339|off")" : "APP CAMPAIGN"
                return .failure(Problem(message: "\(verb) takes \(shape)"))
            }
            if reason != nil, verb != "pause", verb != "cancel" { return .failure(Problem(message: "--reason goes with pause or cancel")) }
            if let reason, reason.utf8.count > CampaignJSON.maximumReasonBytes {
                return .failure(Problem(message: "--reason is longer than \(CampaignJSON.maximumReasonBytes) bytes"))
            }
            let path: CampaignPath
            switch CampaignPath.validated(app: positionals[0], campaign: positionals[1]) {
            case .success(let value): path = value
            case .failure(let error): return .failure(Problem(message: error.message.replacingOccurrences(of: "app:", with: "APP:")
                .replacingOccurrences(of: "campaign:", with: "CAMPAIGN:")))
            }
            let reasonText = reason.flatMap { $0.isEmpty ? nil : $0 }
            switch verb {
            case "pause": return .success(Request(path: path, action: .pause(reason: reasonText)))
            case "resume": return .success(Request(path: path, action: .resume))
            case "cancel": return .success(Request(path: path, action: .cancel(reason: reasonText)))
            case "throttle":
                if positionals[2] == "off" { return .success(Request(path: path, action: .throttle(perMinute: nil))) }
                guard let perMinute = Int(positionals[2]), perMinute >= 1, perMinute <= Int(Int32.max) else {
                    return .failure(Problem(message: "PER_MINUTE must be a whole number from 1 to \(Int32.max), or off; got \(positionals[2])"))
                }
                return .success(Request(path: path, action: .throttle(perMinute: perMinute)))
            case "deadline":
                return deadline(positionals[2], now: now).map { Request(path: path, action: .deadline(sendByMs: $0)) }
            default:
                return .success(Request(path: path, action: nil))
            }
        }

        /// `off` → nil; an RFC 3339 date-time, or `+30m`/`+4h`/`+2d` from `now`, as Unix ms.
        static func deadline(_ text: String, now: Date) -> Result<Int64?, Problem> {
            if text == "off" { return .success(nil) }
            if let seconds = RelativeJobDates.offsetSeconds(text), text.hasPrefix("+") {
                return .success(RFC3339Timestamp.unixMillis(now) + Int64(seconds) * 1000)
            }
            guard let date = RFC3339Timestamp.parse(text), RFC3339Timestamp.unixMillis(date) > 0 else {
                return .failure(Problem(message: "the deadline must be an RFC 3339 date-time (2026-05-01T18:00:00Z), +30m/+4h/+2d, or off; got \(text)"))
            }
            return .success(RFC3339Timestamp.unixMillis(date))
        }
    }
}
