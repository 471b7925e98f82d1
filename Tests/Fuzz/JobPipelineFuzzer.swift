// libFuzzer target `job-pipeline` (scripts/fuzz-libfuzzer.sh; corpus Tests/Fuzz/corpus/job-pipeline/).
//
// Input: job bytes. Pipeline: JobDecoder.decode → PreparedJob.resolve → PayloadBuilder.build.
// Invariants (a violation traps, so libFuzzer keeps the input as a crash-* reproducer): every
// built body is ≤ 4096 bytes of valid UTF-8 JSON, and no header or URL carries CR, LF or NUL.
import Foundation
import PushCore
import PushEncoding
import PushProviders

private let keyring = try! MsgIDKeyring(parsing: "fuzz:" + Data((0..<32).map { UInt8($0) }).base64EncodedString())
private let profile: AppProfile = {
    var profile = AppProfile(apns: .init(topic: "com.example.fuzz", endpoint: "https://127.0.0.1:1"),
                             fcm: .init(projectID: "fuzz", endpoint: "https://127.0.0.1:1"), hasWebPush: true)
    profile.hms = .init(pathID: "107000001", endpoint: "https://127.0.0.1:1", badgeClass: "com.example.fuzz.Main")
    return profile
}()
private let now = Date(timeIntervalSince1970: 1_790_000_000)

private func hasLineBreakOrNUL(_ text: String) -> Bool { text.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 } }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJobPipeline(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: count))
    guard let job = try? JobDecoder.decode(bytes) else { return 0 }
    let prepared = PreparedJob(job: job, context: RenderContext(now: now, keyring: keyring,
                                                                 webPushPolicy: WebPushPolicy(extraAllowedHosts: ["127.0.0.1"])))
    for recipient in job.recipients {
        guard case .ready(let content, let target) = prepared.resolve(recipient) else { continue }
        guard case .success(let request) = PayloadBuilder.build(content, target: target, profile: profile, issuedAtUnix: 1_790_000_000) else { continue }
        if request.body.count > 4096 { fatalError("body \(request.body.count) bytes > 4096 (\(request.platform))") }
        if String(validating: request.body, as: UTF8.self) == nil { fatalError("body is not valid UTF-8") }
        if (try? JSONParser.parse(request.body)) == nil { fatalError("body is not JSON") }
        for header in request.allHeaders where hasLineBreakOrNUL(header.key + header.value) {
            fatalError("header \(header.key) carries CR, LF or NUL")
        }
        if hasLineBreakOrNUL(request.url) { fatalError("URL carries CR, LF or NUL") }
    }
    return 0
}
