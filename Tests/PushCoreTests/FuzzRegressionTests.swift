import Testing
import PushCore

/// Inputs the fuzzer (`pushworker-dev chaos --drill fuzz`) found; each must stay fixed.
@Suite("Fuzz regressions")
struct FuzzRegressionTests {
    /// seed 1, `make chaos`: a collapseId with CR/LF reached the `apns-collapse-id` header.
    @Test("a collapseId with control characters makes the whole job invalid",
          arguments: ["sale\r\nx-injected: 1", "a\u{0}b", "tab\there", "del\u{7F}"])
    func collapseIDControlCharacters(_ collapseID: String) throws {
        var escaped = ""
        for scalar in collapseID.unicodeScalars {
            escaped += scalar.value < 0x20 || scalar.value == 0x7F
                ? "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count) + String(scalar.value, radix: 16)
                : String(scalar)
        }
        let job = #"{"schemaVersion":1,"jobId":"j","appId":"a","campaignId":"c","collapseId":"\#(escaped)","#
            + #""content":{"defaultLanguage":"en","languages":{"en":{"title":"t","body":"b"}}},"recipients":[]}"#
        do {
            _ = try JobDecoder.decode(Array(job.utf8))
            Issue.record("decoded a job whose collapseId holds control characters")
        } catch {
            #expect(error.path == "$.collapseId")
            #expect(error.reason.contains("control characters"))
        }
    }
}
