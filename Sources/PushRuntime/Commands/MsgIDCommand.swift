import Foundation
import PushCore

/// `pushworker msgid verify|decode ID` (DESIGN §6, §15): checks a message id offline.
enum MsgIDCommand {
    static let usage = """
    usage: pushworker msgid verify ID
           pushworker msgid decode ID

    verify: exit 0 when ID is signed by one of PUSHWORKER_MSGID_KEYS, 1 otherwise.
    decode: prints {"kid","appId","campaignId","userId","subscriptionId","platform","variant","valid"};
            exit 1 when ID is not valid (fields are still shown when the id parses).
    """

    static func main(_ arguments: [String]) -> Int32 {
        var code: Int32 = 0
        guard let parsed = CommandSupport.parse(arguments, usage: usage, exitCode: &code) else { return code }
        guard parsed.positionals.count == 2, ["verify", "decode"].contains(parsed.positionals[0]) else {
            printError("error: expected verify|decode ID\n\n\(usage)")
            return ExitCode.usage
        }
        let id = parsed.positionals[1]
        let keys = ProcessInfo.processInfo.environment["PUSHWORKER_MSGID_KEYS"] ?? ""
        let keyring: MsgIDKeyring?
        do { keyring = keys.isEmpty ? nil : try MsgIDKeyring(parsing: keys) } catch {
            printError("PUSHWORKER_MSGID_KEYS: \(error)")
            return ExitCode.config
        }
        let verified = keyring.flatMap { MsgID.verify(id, keyring: $0) }
        if parsed.positionals[0] == "verify" {
            if keyring == nil { printError("PUSHWORKER_MSGID_KEYS is not set: cannot verify") }
            print(verified != nil ? "valid" : "invalid")
            return verified != nil ? ExitCode.ok : ExitCode.failure
        }
        guard let decoded = MsgID.decode(id) else {
            print("{\"valid\":false}")
            return ExitCode.failure
        }
        let fields = decoded.fields
        print("{\"kid\":\(JSONText.quote(decoded.keyID)),\"appId\":\(JSONText.quote(fields.appID)),\"campaignId\":\(JSONText.quote(fields.campaignID))," +
            "\"userId\":\(fields.userID.map(JSONText.quote) ?? "null"),\"subscriptionId\":\(JSONText.quote(fields.subscriptionID))," +
            "\"platform\":\(JSONText.quote(fields.platform)),\"variant\":\(fields.variant.map(JSONText.quote) ?? "null"),\"valid\":\(verified != nil)}")
        return verified != nil ? ExitCode.ok : ExitCode.failure
    }
}
