import PushHTTP
import Testing

@Suite("LibcurlCheck")
struct LibcurlCheckTests {
    @Test("the installed libcurl has HTTP/2 and TLS")
    func installed() throws {
        let info = try LibcurlCheck.validate(allowCleartextHTTP2: false)
        #expect(info.hasHTTP2)
        #expect(!info.sslVersion.isEmpty)
        #expect(info.version.split(separator: ".").count == 3)
        #expect(info.versionNumber >= LibcurlCheck.minimumVersionNumber)
    }

    @Test("the installed libcurl is refused for h2c when older than 8.0")
    func installedCleartext() {
        let info = LibcurlCheck.info()
        if info.versionNumber < 0x080000 {
            #expect(throws: HTTPClientError.self) { _ = try LibcurlCheck.validate(allowCleartextHTTP2: true) }
        } else {
            #expect(throws: Never.self) { _ = try LibcurlCheck.validate(allowCleartextHTTP2: true) }
        }
    }

    struct Row: Sendable, CustomTestStringConvertible {
        let info: LibcurlInfo
        let cleartext: Bool
        let refusal: String?
        var testDescription: String { "\(info.version) http2=\(info.hasHTTP2) h2c=\(cleartext)" }
    }

    @Test("known-broken combinations are refused with a clear message", arguments: [
        Row(info: LibcurlInfo(version: "7.88.1", versionNumber: 0x075801, hasHTTP2: true, sslVersion: "OpenSSL/3.0.11"), cleartext: false, refusal: "RST_STREAM"),
        Row(info: LibcurlInfo(version: "7.88.1", versionNumber: 0x075801, hasHTTP2: true, sslVersion: "OpenSSL/3.0.11"), cleartext: true, refusal: "h2c"),
        Row(info: LibcurlInfo(version: "8.14.1", versionNumber: 0x080E01, hasHTTP2: true, sslVersion: "OpenSSL/3.0.11"), cleartext: true, refusal: nil),
        Row(info: LibcurlInfo(version: "8.14.1", versionNumber: 0x080E01, hasHTTP2: true, sslVersion: "OpenSSL/3.0.11"), cleartext: false, refusal: nil),
        Row(info: LibcurlInfo(version: "8.0.0", versionNumber: 0x080000, hasHTTP2: true, sslVersion: "OpenSSL/3.0.11"), cleartext: false, refusal: nil),
        Row(info: LibcurlInfo(version: "8.14.1", versionNumber: 0x080E01, hasHTTP2: false, sslVersion: "OpenSSL/3.0.11"), cleartext: false, refusal: "HTTP/2"),
        Row(info: LibcurlInfo(version: "8.14.1", versionNumber: 0x080E01, hasHTTP2: true, sslVersion: ""), cleartext: false, refusal: "TLS"),
        Row(info: LibcurlInfo(version: "7.74.0", versionNumber: 0x074A00, hasHTTP2: true, sslVersion: "OpenSSL/1.1.1"), cleartext: false, refusal: "too old"),
    ])
    func table(row: Row) {
        do {
            let info = try LibcurlCheck.validate(row.info, allowCleartextHTTP2: row.cleartext)
            #expect(row.refusal == nil, "accepted")
            #expect(info.version == row.info.version)
        } catch {
            #expect(row.refusal != nil, "refused: \(error.message)")
            if let refusal = row.refusal { #expect(error.message.contains(refusal)) }
        }
    }
}
