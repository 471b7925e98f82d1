// libFuzzer target `msgid` (scripts/fuzz-libfuzzer.sh; corpus Tests/Fuzz/corpus/msgid/).
//
// Input: any text, read as a msgId (what `POST /v1/e/<letter>/<msgId>` carries), as base64url,
// and as a `PUSHWORKER_MSGID_KEYS` value. Invariants (a violation traps):
// - a msgId that verifies names a key of the keyring and is exactly what signing its fields
//   with that key gives (one id per fields: the id is the de-duplication key);
// - the fields of any well-formed id, signed again, verify to the same fields;
// - strict base64url is canonical: decoding then encoding gives the text back;
// - a keyring that parses signs ids it verifies.
import PushCore
import PushEncoding

private func key(_ first: UInt8) -> String { Base64URL.encode((first..<first + 32).map { $0 }) }
/// `k1` signs, `k0` only verifies (a rotation in progress). The corpus's ids are signed with these keys.
private let keyring = try! MsgIDKeyring(parsing: "k1:\(key(0)),k0:\(key(32))")
private let oldKeyring = try! MsgIDKeyring(parsing: "k0:\(key(32))")
private let sample = MsgIDFields(appID: "app", campaignID: "c", userID: "u", subscriptionID: "s", platform: "ios", variant: nil)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMsgID(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: count), as: UTF8.self)

    if let fields = MsgID.verify(text, keyring: keyring) {
        guard let decoded = MsgID.decode(text), decoded.fields == fields else { fatalError("verified, but decode disagrees") }
        let signer = decoded.keyID == keyring.signingKeyID ? keyring : decoded.keyID == "k0" ? oldKeyring : nil
        guard let signer else { fatalError("verified under key id \(decoded.keyID), which the keyring does not hold") }
        if MsgID.sign(fields, keyring: signer) != text { fatalError("a second id verifies to the same fields") }
    }
    if let decoded = MsgID.decode(text) {
        let id = MsgID.sign(decoded.fields, keyring: keyring)
        if MsgID.verify(id, keyring: keyring) != decoded.fields { fatalError("signed fields do not verify back") }
    }
    if let bytes = Base64URL.decode(text, .strict), Base64URL.encode(bytes) != text {
        fatalError("strict base64url accepted a non-canonical text")
    }
    _ = Base64URL.decode(text, .lenient)
    if text.utf8.count <= 4096, let parsed = try? MsgIDKeyring(parsing: text) {
        let id = MsgID.sign(sample, keyring: parsed)
        if MsgID.verify(id, keyring: parsed) != sample { fatalError("a parsed keyring does not verify its own id") }
        if !parsed.keyIDs.contains(parsed.signingKeyID) { fatalError("the signing key id is not among the key ids") }
    }
    return 0
}
