// libFuzzer target `credentials` (scripts/fuzz-libfuzzer.sh; corpus Tests/Fuzz/corpus/credentials/).
//
// Input: an app's credentials folder as text: each line `### <name>` starts the file `<name>`
// (apns.json, fcm.json, webpush.json, hms.json, app.json, or a file they name such as
// `AuthKey.p8`), which runs to the next such line. AppCredentials.load parses it as it parses
// a folder: the JSON files, the APNs .p8 key or certificate (PEM or PKCS#12), the FCM service
// account's RSA key, the VAPID key pair, Huawei's client. Invariants (a violation traps):
// - every problem names the app and one of its files;
// - at most one APNs authentication (key or certificate);
// - every endpoint kept is https; Huawei's ids are single path segments;
// - a VAPID key pair kept is a matching pair.
import Foundation
import PushCore
import PushEncoding
import PushRuntime

private let marker = Array("### ".utf8)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCredentials(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: count))
    var files: [String: [UInt8]] = [:]
    var name: String?
    var content: [UInt8] = []
    var lineStart = 0
    while lineStart < input.count {
        let lineEnd = input[lineStart...].firstIndex(of: 0x0A) ?? input.count
        let line = input[lineStart..<lineEnd]
        if line.starts(with: marker) {
            if let name { files[name] = content }
            name = String(decoding: line.dropFirst(marker.count), as: UTF8.self)
            content = []
        } else if name != nil {
            content += input[lineStart..<min(lineEnd + 1, input.count)]
        }
        lineStart = lineEnd + 1
    }
    if let name { files[name] = content }

    let credentials = AppCredentials.load(appID: "fuzz", now: 1_790_000_000) { files[$0].map { .bytes($0) } ?? .absent }
    for problem in credentials.problems where !problem.hasPrefix("fuzz/") { fatalError("problem without its file: \(problem)") }
    if credentials.apns != nil && credentials.apnsCertificate != nil { fatalError("both APNs key and certificate") }
    let endpoints = [credentials.apns?.endpoint, credentials.apnsCertificate?.endpoint, credentials.fcm?.endpoint,
                     credentials.fcm?.tokenURI, credentials.hms?.endpoint, credentials.hms?.tokenEndpoint, credentials.webhook?.url]
    for case let endpoint? in endpoints where !endpoint.hasPrefix("https://") { fatalError("endpoint \(endpoint) is not https") }
    if let hms = credentials.hms {
        for id in [hms.clientID, hms.pathID] where id.isEmpty || id.contains("/") || id == "." || id == ".." {
            fatalError("Huawei id \(id) is not one path segment")
        }
    }
    if let webPush = credentials.webPush,
       Base64URL.encode(webPush.key.publicKey.uncompressed) != webPush.publicKey.replacingOccurrences(of: "=", with: "") {
        fatalError("VAPID public key does not match the private key")
    }
    _ = credentials.profile
    return 0
}

