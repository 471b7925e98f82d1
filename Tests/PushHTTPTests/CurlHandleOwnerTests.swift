import CCurl
@testable import PushHTTP
import Testing

/// The failure paths of the libcurl handle owners: the handle is made first, wrapped at once,
/// then configured; an option libcurl refuses only throws, and `deinit` cleans the handle up
/// once. (`CurlMulti.init` used to call `curl_multi_cleanup` and throw, a latent double free.)
@Suite("libcurl handle owners: failure paths")
struct CurlHandleOwnerTests {
    @Test("a multi handle whose option libcurl refuses throws, naming it; many in a row leave the process fine")
    func refusedMultiOption() throws {
        let bogus = CURLMoption(rawValue: 99_999)
        for _ in 0..<100 {
            let error = #expect(throws: HTTPClientError.self) {
                _ = try CurlMulti.make(options: [(CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX), "CURLMOPT_PIPELINING"), (bogus, 1, "BOGUS")])
            }
            #expect(error?.description.contains("libcurl refused BOGUS=1") == true)
        }
        let multi = try CurlMulti.make(maxConnectionsPerHost: 1, maxTotalConnections: 4, maxConcurrentStreams: 10)
        multi.wakeup()
    }

    @Test("an easy handle whose client options libcurl refuses (an unknown protocol) throws a setup error")
    func refusedEasyOption() throws {
        var settings = try HTTP2Client.settings(for: HTTPClientConfiguration())
        let multi = try CurlMulti.make(maxConnectionsPerHost: 1, maxTotalConnections: 1, maxConcurrentStreams: 1)
        settings.protocols = "https,no-such-protocol"
        for _ in 0..<100 {
            let error = #expect(throws: HTTPTransportError.self) { _ = try CurlTransfer.make(settings: settings, multi: multi) }
            #expect(error.map { String(describing: $0) }?.contains("option \(CURLOPT_PROTOCOLS_STR.rawValue):") == true)
        }
        settings.protocols = "https"
        _ = try CurlTransfer.make(settings: settings, multi: multi)
    }
}
