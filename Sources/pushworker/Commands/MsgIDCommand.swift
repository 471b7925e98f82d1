import Foundation
import PushRuntime
import PushCLI
import PushCore
import PushWorker
import PushEncoding

/// `pushworker msgid verify|decode|sign` (docs/reference/msgid.md): checks (or makes) a message id offline
/// with the keys of `PUSHWORKER_MSGID_KEYS`.
enum MsgIDCommand {
    static let usage = """
    usage: pushworker msgid verify ID
           pushworker msgid decode ID
           pushworker msgid sign --app A --campaign C --subscription S --platform P [--user U] [--variant V]

    Keys come from PUSHWORKER_MSGID_KEYS (kid:base64key[,kid:base64key…]): the first signs, all verify.
    verify: prints valid|invalid; exit 0 when ID is signed by one of the keys, 1 otherwise.
    decode: prints one JSON object
            {"kid","appId","campaignId","userId","subscriptionId","platform","variant","valid"};
            exit 1 when ID is not valid (the fields are still shown when the id parses;
            an id that does not parse prints {"valid":false}).
    sign:   prints the id the worker would give these fields (support, tests, replaying events).
    """

    static func main(_ arguments: [String]) -> Int32 {
        var code: Int32 = 0
        let options: Set<String> = ["app", "campaign", "subscription", "platform", "user", "variant"]
        guard let parsed = CommandSupport.parse(arguments, usage: usage, values: options, exitCode: &code) else { return code }
        let keys = ProcessInfo.processInfo.environment["PUSHWORKER_MSGID_KEYS"] ?? ""
        let keyring: MsgIDKeyring?
        do { keyring = keys.isEmpty ? nil : try MsgIDKeyring(parsing: keys) } catch {
            printError("\(error)")
            return ExitCode.config
        }
        switch parsed.positionals.first {
        case "sign" where parsed.positionals.count == 1:
            return sign(parsed, keyring: keyring)
        case "verify" where parsed.positionals.count == 2, "decode" where parsed.positionals.count == 2:
            guard parsed.values.isEmpty else { break }
            return check(parsed.positionals[1], decode: parsed.positionals[0] == "decode", keyring: keyring)
        default:
            break
        }
        if let verb = parsed.positionals.first, !["verify", "decode", "sign"].contains(verb) {
            return CommandSupport.unknownSubcommand(verb, among: ["verify", "decode", "sign"], usage: usage)
        }
        return CommandSupport.usageError("expected verify ID, decode ID or sign --app … --campaign … --subscription … --platform …", usage: usage)
    }

    private static func check(_ id: String, decode: Bool, keyring: MsgIDKeyring?) -> Int32 {
        if keyring == nil { printError("warning: PUSHWORKER_MSGID_KEYS is not set: no id can be valid") }
        let verified = keyring.flatMap { MsgID.verify(id, keyring: $0) }
        guard decode else {
            print(verified != nil ? "valid" : "invalid")
            return verified != nil ? ExitCode.ok : ExitCode.failure
        }
        guard let decoded = MsgID.decode(id) else {
            print("{\"valid\":false}")
            return ExitCode.failure
        }
        print(json(keyID: decoded.keyID, fields: decoded.fields, valid: verified != nil))
        return verified != nil ? ExitCode.ok : ExitCode.failure
    }

    private static func sign(_ parsed: CommandArguments, keyring: MsgIDKeyring?) -> Int32 {
        guard let keyring else {
            printError("PUSHWORKER_MSGID_KEYS is not set: nothing to sign with")
            return ExitCode.config
        }
        guard let app = parsed.value("app"), let campaign = parsed.value("campaign"),
              let subscription = parsed.value("subscription"), let platform = parsed.value("platform") else {
            _ = CommandSupport.usageError("sign needs --app, --campaign, --subscription and --platform", usage: usage)
            return ExitCode.usage
        }
        let fields = MsgIDFields(appID: app, campaignID: campaign, userID: parsed.value("user"), subscriptionID: subscription,
                                 platform: platform, variant: parsed.value("variant"))
        print(MsgID.sign(fields, keyring: keyring))
        return ExitCode.ok
    }

    static func json(keyID: String, fields: MsgIDFields, valid: Bool) -> String {
        JSONWriter.object { w in
            w.member("kid", keyID)
            w.member("appId", fields.appID)
            w.member("campaignId", fields.campaignID)
            w.member("userId", orNull: fields.userID)
            w.member("subscriptionId", fields.subscriptionID)
            w.member("platform", fields.platform)
            w.member("variant", orNull: fields.variant)
            w.member("valid", valid)
        }.text
    }
}
