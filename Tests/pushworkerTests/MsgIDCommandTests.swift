import Foundation
import PushCore
import PushTestSupport
import Testing

@Suite("pushworker msgid")
struct MsgIDCommandTests {
    static let signArguments = ["msgid", "sign", "--app", "app_demo", "--campaign", "cmp_42", "--user", "u1", "--subscription", "s1",
                                "--platform", "ios", "--variant", "A"]

    static func run(_ arguments: [String], keys: String?) throws -> (status: Int32, stdout: String, stderr: String) {
        try runCommand(BuiltProducts.pushworker, arguments, environment: CLITest.environment(keys.map { ["PUSHWORKER_MSGID_KEYS": $0] } ?? [:]))
    }

    static func signed() throws -> String {
        let result = try run(signArguments, keys: CLITest.keys)
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `id` with the character at `offset` replaced by another base64url character.
    static func tampered(_ id: String, at offset: Int) -> String {
        var characters = Array(id)
        characters[offset] = characters[offset] == "A" ? "B" : "A"
        return String(characters)
    }

    @Test("sign is what the worker signs; verify and decode accept it")
    func valid() throws {
        let id = try Self.signed()
        let keyring = try MsgIDKeyring(parsing: CLITest.keys)
        let fields = MsgIDFields(appID: "app_demo", campaignID: "cmp_42", userID: "u1", subscriptionID: "s1", platform: "ios", variant: "A")
        #expect(id == MsgID.sign(fields, keyring: keyring))
        let verify = try Self.run(["msgid", "verify", id], keys: CLITest.keys)
        #expect(verify.status == 0)
        #expect(verify.stdout == "valid\n")
        let decode = try Self.run(["msgid", "decode", id], keys: CLITest.keys)
        #expect(decode.status == 0)
        let lines = decode.stdout.split(separator: "\n")
        #expect(lines.count == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(decode.stdout.utf8)) as? [String: Any])
        #expect(object["kid"] as? String == "k1")
        #expect(object["appId"] as? String == "app_demo")
        #expect(object["campaignId"] as? String == "cmp_42")
        #expect(object["userId"] as? String == "u1")
        #expect(object["subscriptionId"] as? String == "s1")
        #expect(object["platform"] as? String == "ios")
        #expect(object["variant"] as? String == "A")
        #expect(object["valid"] as? Bool == true)
    }

    @Test("one changed character, a wrong key or no key: invalid, exit 1", arguments: [10, 40, 80])
    func tampered(offset: Int) throws {
        let id = try Self.signed()
        let changed = Self.tampered(id, at: min(offset, id.count - 2))
        let verify = try Self.run(["msgid", "verify", changed], keys: CLITest.keys)
        #expect(verify.status == 1)
        #expect(verify.stdout == "invalid\n")
        let decode = try Self.run(["msgid", "decode", changed], keys: CLITest.keys)
        #expect(decode.status == 1)
        let object = try JSONSerialization.jsonObject(with: Data(decode.stdout.utf8)) as? [String: Any]
        #expect(object?["valid"] as? Bool == false)
    }

    @Test("a wrong key does not verify; without keys nothing is valid")
    func wrongKey() throws {
        let id = try Self.signed()
        #expect(try Self.run(["msgid", "verify", id], keys: CLITest.otherKeys).status == 1)
        let decode = try Self.run(["msgid", "decode", id], keys: CLITest.otherKeys)
        #expect(decode.status == 1)
        let object = try JSONSerialization.jsonObject(with: Data(decode.stdout.utf8)) as? [String: Any]
        #expect(object?["valid"] as? Bool == false)
        #expect(object?["subscriptionId"] as? String == "s1")  // fields still shown
        let noKeys = try Self.run(["msgid", "verify", id], keys: nil)
        #expect(noKeys.status == 1)
        #expect(noKeys.stderr.contains("PUSHWORKER_MSGID_KEYS"))
    }

    @Test("rotation: an id signed by the old key verifies while it is listed second, not once it is dropped")
    func rotated() throws {
        let id = try Self.signed()
        #expect(try Self.run(["msgid", "verify", id], keys: CLITest.otherKeys + "," + CLITest.keys).status == 0)
        let decode = try Self.run(["msgid", "decode", id], keys: CLITest.otherKeys + "," + CLITest.keys)
        #expect(decode.stdout.contains(#""valid":true"#))
        // New ids are signed by the first key.
        let fresh = try Self.run(Self.signArguments, keys: CLITest.otherKeys + "," + CLITest.keys).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try Self.run(["msgid", "decode", fresh], keys: CLITest.otherKeys).stdout.contains(#""kid":"k9""#))
        #expect(try Self.run(["msgid", "verify", id], keys: CLITest.otherKeys).status == 1)
    }

    @Test("garbage: decode prints {\"valid\":false}, exit 1", arguments: ["garbage!!", "", "AAAA", String(repeating: "A", count: 3000)])
    func garbage(id: String) throws {
        let decode = try Self.run(["msgid", "decode", id], keys: CLITest.keys)
        #expect(decode.status == 1)
        #expect(decode.stdout == "{\"valid\":false}\n")
        #expect(try Self.run(["msgid", "verify", id], keys: CLITest.keys).status == 1)
    }

    @Test("usage errors exit 64; bad keys exit 78; --help exits 0")
    func usage() throws {
        #expect(try Self.run(["msgid"], keys: CLITest.keys).status == 64)
        #expect(try Self.run(["msgid", "verify"], keys: CLITest.keys).status == 64)
        #expect(try Self.run(["msgid", "frobnicate", "x"], keys: CLITest.keys).status == 64)
        #expect(try Self.run(["msgid", "sign", "--app", "a"], keys: CLITest.keys).status == 64)
        #expect(try Self.run(["msgid", "verify", "x"], keys: "k1:c2hvcnQ=").status == 78)
        #expect(try Self.run(["msgid", "sign", "--app", "a", "--campaign", "c", "--subscription", "s", "--platform", "ios"], keys: nil).status == 78)
        let help = try Self.run(["msgid", "--help"], keys: nil)
        #expect(help.status == 0)
        #expect(help.stdout.contains("pushworker msgid decode"))
    }
}
