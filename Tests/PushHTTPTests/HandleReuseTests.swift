import Foundation
@testable import PushHTTP
import PushTestSupport
import Testing

/// One easy handle carries its options from one request to the next (only the per-request ones
/// are set again): every request must still go out exactly as asked, whatever came before it.
/// Requests are sent one at a time, so the I/O loop reuses its single handle (`handlesCreated`).
@Suite("Easy-handle reuse against nghttpd", .serialized)
struct HandleReuseTests {
    struct Step: CustomStringConvertible {
        var method: String
        var path: String
        var body: String = ""
        /// nghttpd echoes POST and PUT bodies on /echo; other methods look for a file there.
        var expectedStatus: Int { path == "/echo" && !["POST", "PUT"].contains(method) ? 404 : 200 }
        var description: String { "\(method) \(path)\(body.isEmpty ? "" : " +body")" }
    }

    /// Every switch between body and no body, HEAD, GET, POST and custom methods, both ways.
    static let sequence: [Step] = [
        Step(method: "POST", path: "/echo", body: "first post"),
        Step(method: "GET", path: "/hello.txt"),
        Step(method: "HEAD", path: "/hello.txt"),
        Step(method: "POST", path: "/echo", body: "post after head"),
        Step(method: "PUT", path: "/echo", body: "put body"),
        Step(method: "POST", path: "/echo", body: "post after put"),
        Step(method: "DELETE", path: "/hello.txt"),
        Step(method: "GET", path: "/hello.txt"),
        Step(method: "OPTIONS", path: "/hello.txt"),
        Step(method: "HEAD", path: "/hello.txt"),
        Step(method: "GET", path: "/hello.txt"),
        Step(method: "HEAD", path: "/hello.txt"),
        Step(method: "PATCH", path: "/echo", body: "patch after head"),
        Step(method: "DELETE", path: "/echo", body: "delete with a body"),
        Step(method: "GET", path: "/hello.txt"),
        Step(method: "POST", path: "/echo"),
        Step(method: "HEAD", path: "/hello.txt"),
        Step(method: "GET", path: "/hello.txt"),
    ]

    @Test("one reused handle sends each method as asked, whatever the previous request was")
    func methodsOnOneHandle() async throws {
        let server = try NghttpdServer(verbose: true)
        let client = try HTTP2Client(configuration: configuration(caFile: server.caFile))
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        for step in Self.sequence {
            let request = HTTPRequest(method: step.method, url: server.origin + step.path, body: Array(step.body.utf8))
            let response = try await client.send(request).get()
            #expect(response.status == step.expectedStatus, "\(step)")
            let text = String(decoding: response.body, as: UTF8.self)
            switch (step.method, step.path) {
            case ("HEAD", _):
                #expect(response.body.isEmpty, "\(step)")
                #expect(response.header("content-length") == "\(NghttpdServer.helloBody.utf8.count)", "\(step)")
            case (_, "/echo") where ["POST", "PUT"].contains(step.method):
                #expect(text == step.body, "\(step): echoed \(text)")
            case (_, "/hello.txt"):
                #expect(text == NghttpdServer.helloBody, "\(step)")
            default:
                break
            }
        }
        #expect(client.handlesCreated == 1)
        let received = server.receivedRequests()
        #expect(received.count == Self.sequence.count)
        for (step, request) in zip(Self.sequence, received) {
            #expect(request.method == step.method, "\(step): the server saw \(request.method ?? "nothing")")
            #expect(request.path == step.path, "\(step)")
            let length = request.value("content-length")
            if step.body.isEmpty && !["POST", "PUT", "PATCH"].contains(step.method) {
                #expect(length == nil, "\(step): a body-less request sent content-length \(length ?? "")")
            } else {
                #expect(length == "\(step.body.utf8.count)", "\(step): content-length \(length ?? "none")")
            }
        }
    }

    @Test("headers of one request never reach the next; empty values, no Expect, no invented content type")
    func headersOnOneHandle() async throws {
        let server = try NghttpdServer(verbose: true)
        let client = try HTTP2Client(configuration: configuration(caFile: server.caFile))
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        let large = String(repeating: "v", count: 5000)
        let many = (0..<40).map { HTTPHeader(name: "x-many-\($0)", value: "value \($0)") }
        let requests = [
            HTTPRequest(method: "POST", url: server.origin + "/echo", headers: [
                HTTPHeader(name: "X-First", value: "1"), HTTPHeader(name: "Content-Type", value: "application/json"),
                HTTPHeader(name: "x-empty", value: ""),
            ], body: Array("{}".utf8)),
            HTTPRequest(method: "POST", url: server.origin + "/echo", headers: [HTTPHeader(name: "x-second", value: "2")], body: Array("a".utf8)),
            HTTPRequest(method: "POST", url: server.origin + "/echo", headers: many + [HTTPHeader(name: "x-large", value: large)], body: Array("b".utf8)),
            HTTPRequest(method: "GET", url: server.origin + "/hello.txt"),
            HTTPRequest(method: "POST", url: server.origin + "/echo", headers: [HTTPHeader(name: "content-TYPE", value: "text/plain")], body: Array("c".utf8)),
        ]
        for request in requests {
            #expect(try await client.send(request).get().status == 200)
        }
        #expect(client.handlesCreated == 1)
        let received = server.receivedRequests()
        try #require(received.count == requests.count)
        let names = received.map { Set($0.headers.map(\.name).filter { !$0.hasPrefix(":") }) }

        #expect(received[0].value("x-first") == "1")
        #expect(received[0].values("content-type") == ["application/json"])
        #expect(received[0].value("x-empty") == "", "an empty value is sent as an empty header")
        #expect(!names[0].contains("x-second"))

        #expect(received[1].value("x-second") == "2")
        #expect(!names[1].contains("x-first") && !names[1].contains("x-empty"))
        #expect(!names[1].contains("content-type"), "no invented form content type: \(names[1])")

        #expect(received[2].value("x-large") == large)
        for index in 0..<40 { #expect(received[2].value("x-many-\(index)") == "value \(index)") }
        #expect(!names[2].contains("x-second"))

        #expect(names[3].isDisjoint(with: ["x-large", "x-many-0", "content-type", "x-second"]), "\(names[3])")
        #expect(received[4].values("content-type") == ["text/plain"])
        #expect(names[4].isDisjoint(with: ["x-large", "x-many-39"]), "\(names[4])")
        for request in received { #expect(request.value("expect") == nil) }
    }

    @Test("a shared header block goes out with every request that carries it, after the request's own fields, and with nothing of another's")
    func sharedHeaderBlock() async throws {
        let server = try NghttpdServer(verbose: true)
        let client = try HTTP2Client(configuration: configuration(caFile: server.caFile))
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        let jobA = try HTTPHeaderBlock([HTTPHeader(name: "apns-topic", value: "a.app"), HTTPHeader(name: "authorization", value: "bearer A"),
                                        HTTPHeader(name: "x-empty", value: "")])
        let jobB = try HTTPHeaderBlock([HTTPHeader(name: "content-type", value: "application/json"), HTTPHeader(name: "x-b", value: "2")])
        let requests = [
            HTTPRequest(method: "POST", url: server.origin + "/echo", sharedHeaders: jobA, body: Array("one".utf8)),
            HTTPRequest(method: "POST", url: server.origin + "/echo", sharedHeaders: jobA, body: Array("two".utf8)),
            HTTPRequest(method: "POST", url: server.origin + "/echo", headers: [HTTPHeader(name: "x-own", value: "mine")], sharedHeaders: jobB,
                        body: Array("three".utf8)),
            HTTPRequest(method: "POST", url: server.origin + "/echo", body: Array("four".utf8)),
            HTTPRequest(method: "GET", url: server.origin + "/hello.txt", sharedHeaders: jobA),
        ]
        for request in requests {
            let response = try await client.send(request).get()
            #expect(response.status == 200)
            if request.method == "POST" { #expect(response.body == request.body, "the body is the request's own") }
        }
        #expect(client.handlesCreated == 1)
        let received = server.receivedRequests()
        try #require(received.count == requests.count)
        let names = received.map { request in request.headers.map(\.name).filter { !$0.hasPrefix(":") } }
        for index in [0, 1, 4] {
            #expect(received[index].value("apns-topic") == "a.app")
            #expect(received[index].values("authorization") == ["bearer A"])
            #expect(received[index].value("x-empty") == "")
            #expect(!names[index].contains("accept") && !names[index].contains("content-type"), "libcurl's defaults removed: \(names[index])")
        }
        #expect(received[2].value("x-own") == "mine")
        #expect(received[2].values("content-type") == ["application/json"])
        #expect(received[2].value("x-b") == "2")
        #expect(names[2].firstIndex(of: "x-own")! < names[2].firstIndex(of: "x-b")!, "own fields first: \(names[2])")
        #expect(!names[2].contains("apns-topic") && !names[2].contains("authorization"))
        #expect(!names[3].contains("apns-topic") && !names[3].contains("x-b") && !names[3].contains("content-type"), "\(names[3])")
        #expect(received[4].method == "GET")
    }

    @Test("one reused handle switches between h2c and TLS origins")
    func cleartextThenTLS() async throws {
        let tls = try NghttpdServer()
        let cleartext = try NghttpdServer(tls: false)
        let client = try HTTP2Client(configuration: configuration(caFile: tls.caFile) { $0.allowCleartextHTTP2 = true })
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        // TLS first: h2c after a TLS request needs CURLOPT_HTTP_VERSION changed back to prior knowledge.
        for origin in [tls.origin, cleartext.origin, tls.origin, cleartext.origin] {
            let get = try await client.send(HTTPRequest(url: origin + "/hello.txt")).get()
            #expect(get.status == 200 && get.httpVersion == 2, "GET \(origin)")
            #expect(String(decoding: get.body, as: UTF8.self) == NghttpdServer.helloBody)
            let post = try await client.send(HTTPRequest(method: "POST", url: origin + "/echo", body: Array(origin.utf8))).get()
            #expect(post.status == 200 && post.httpVersion == 2, "POST \(origin)")
            #expect(post.body == Array(origin.utf8))
        }
        #expect(client.handlesCreated == 1)
    }

    @Test("a request refused before reaching libcurl takes no handle; the next request reuses the same one")
    func refusedRequestTakesNoHandle() async throws {
        let server = try NghttpdServer()
        let client = try HTTP2Client(configuration: configuration(caFile: server.caFile))
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        #expect(try await client.send(HTTPRequest(url: server.origin + "/hello.txt")).get().status == 200)
        let injected = HTTPRequest(url: server.origin + "/hello.txt", headers: [HTTPHeader(name: "x", value: "a\r\nb: c")])
        #expect(await client.send(injected).failure == .invalidRequest("header x contains CR, LF or NUL"))
        #expect(await client.send(HTTPRequest(url: "http://127.0.0.1:\(server.port)/hello.txt")).failure
            == .invalidRequest("http:// URLs are not allowed (TLS only)"))
        #expect(try await client.send(HTTPRequest(url: server.origin + "/hello.txt")).get().status == 200)
        #expect(client.handlesCreated == 1)
    }

    @Test("a handle libcurl refused an option on is dropped, and the next request gets a fresh one")
    func failedConfigureDropsTheHandle() async throws {
        let server = try NghttpdServer()
        let client = try HTTP2Client(configuration: configuration(caFile: server.caFile))
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        #expect(try await client.send(HTTPRequest(method: "HEAD", url: server.origin + "/hello.txt")).get().status == 200)
        // libcurl refuses strings over 8,000,000 bytes (CURL_MAX_INPUT_LENGTH) for CURLOPT_URL.
        let tooLong = HTTPRequest(url: server.origin + "/" + String(repeating: "a", count: 8_100_000))
        guard case .invalidRequest = await client.send(tooLong).failure else {
            Issue.record("expected .invalidRequest for an 8 MB URL")
            return
        }
        let response = try await client.send(HTTPRequest(url: server.origin + "/hello.txt")).get()
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == NghttpdServer.helloBody, "a fresh handle: GET, not the earlier HEAD")
        #expect(client.handlesCreated == 2)
    }
}

/// The byte-level helpers of the request path, without I/O.
@Suite("Request building")
struct RequestBuildingTests {
    @Test("a prepared request holds every header line in order, NUL-terminated, and libcurl's defaults removed")
    func headerList() throws {
        for round in 0..<3 {
            let headers = (0..<(round * 20 + 1)).map { HTTPHeader(name: "x-h\($0)", value: $0 % 3 == 0 ? "" : "value-\($0)-\(round)") }
            let body = [UInt8](repeating: UInt8(round), count: round * 700)
            let prepared = try CurlPreparedRequest(HTTPRequest(method: "POST", url: "https://a.example/p/\(round)", headers: headers, body: body),
                                                   settings: .forTests())
            let expected = headers.map { $0.value.isEmpty ? "\($0.name);" : "\($0.name): \($0.value)" } + ["Accept:", "Content-Type:"]
            #expect(prepared.headerLines == expected, "round \(round)")
            #expect(prepared.headerCount == expected.count)
            #expect(String(cString: prepared.url) == "https://a.example/p/\(round)")
            #expect(Array(UnsafeRawBufferPointer(start: prepared.body, count: prepared.bodyCount)) == body)
        }
    }

    @Test("a prepared request sends what its method needs: body, custom method, no form content type when one is given")
    func preparedMethods() throws {
        func prepare(_ method: String, body: String = "", headers: [HTTPHeader] = []) throws -> CurlPreparedRequest {
            try CurlPreparedRequest(HTTPRequest(method: method, url: "https://a.example/x", headers: headers, body: Array(body.utf8)),
                                    settings: .forTests())
        }
        #expect(try prepare("POST").method == .body(custom: nil))
        #expect(try prepare("PUT").method == .body(custom: "PUT"))
        #expect(try prepare("DELETE", body: "x").method == .body(custom: "DELETE"))
        #expect(try prepare("GET").method == .noBody(custom: nil))
        #expect(try prepare("OPTIONS").method == .noBody(custom: "OPTIONS"))
        #expect(try prepare("HEAD").method == .head)
        #expect(try prepare("GET").headerLines == ["Accept:"])
        #expect(try prepare("POST", headers: [HTTPHeader(name: "Content-Type", value: "a/b"), HTTPHeader(name: "accept", value: "*/*")])
            .headerLines == ["Content-Type: a/b", "accept: */*"])
        let big = try prepare("POST", body: String(repeating: "b", count: CurlTransfer.expectThreshold + 1))
        #expect(big.headerLines == ["Accept:", "Content-Type:", "Expect:"])
    }

    @Test("a shared header block is checked once, laid out with libcurl's defaults removed, and linked after a request's own lines")
    func sharedHeaderLines() throws {
        #expect(throws: HTTPTransportError.invalidRequest("header authorization contains CR, LF or NUL")) {
            try HTTPHeaderBlock([HTTPHeader(name: "apns-topic", value: "a"), HTTPHeader(name: "authorization", value: "bearer x\r\nevil: 1")])
        }
        #expect(throws: HTTPTransportError.invalidRequest("invalid header name")) { try HTTPHeaderBlock([HTTPHeader(name: "bad name", value: "v")]) }
        let block = try HTTPHeaderBlock([HTTPHeader(name: "apns-topic", value: "a.app"), HTTPHeader(name: "authorization", value: "bearer J"),
                                         HTTPHeader(name: "x-empty", value: "")])
        let shared = ["apns-topic: a.app", "authorization: bearer J", "x-empty;", "Accept:", "Content-Type:"]
        #expect(block.lines.count == shared.count)
        let alone = try CurlPreparedRequest(HTTPRequest(method: "POST", url: "https://a.example/3/device/t", sharedHeaders: block,
                                                        body: Array("{}".utf8)), settings: .forTests())
        #expect(alone.headerLines == shared)
        #expect(alone.headers == block.lines.head, "no line of its own: libcurl is pointed at the block itself")
        #expect(alone.headerCount == shared.count)
        #expect(Array(UnsafeRawBufferPointer(start: alone.body, count: alone.bodyCount)) == Array("{}".utf8))
        let own = try CurlPreparedRequest(HTTPRequest(method: "POST", url: "https://a.example/x", headers: [HTTPHeader(name: "x-own", value: "1")],
                                                      sharedHeaders: block, body: Array(repeating: 7, count: CurlTransfer.expectThreshold + 1)),
                                          settings: .forTests())
        #expect(own.headerLines == ["x-own: 1", "Expect:"] + shared)
        #expect(own.headerCount == shared.count + 2)
        #expect(alone.headerLines == shared, "the block is not changed by a request linked to it")
        let typed = try HTTPHeaderBlock([HTTPHeader(name: "Content-Type", value: "application/json"), HTTPHeader(name: "accept", value: "*/*")])
        #expect(typed.lines.count == 2)
        #expect(try CurlPreparedRequest(HTTPRequest(method: "GET", url: "https://a.example/", sharedHeaders: typed), settings: .forTests())
            .headerLines == ["Content-Type: application/json", "accept: */*"])
        #expect(try HTTPHeaderBlock([]).lines.count == 2)
        #expect(throws: HTTPTransportError.self) {
            try CurlPreparedRequest(HTTPRequest(method: "POST", url: "https://a.example/", headers: [HTTPHeader(name: "x", value: "a\nb")],
                                                sharedHeaders: block), settings: .forTests())
        }
    }

    @Test("a prepared request knows where a provider URL's path starts and whether it is plain", arguments: [
        ("https://api.example:443/3/device/abc", 23, true, true), ("https://a.example/x?q=1", 17, false, false),
        ("https://a.example/", 17, false, true), ("https://a.example/a/../b", 17, false, true), ("https://a.example", nil, false, true),
    ] as [(String, Int?, Bool, Bool)])
    func preparedPath(url: String, start: Int?, plain: Bool, noQuery: Bool) throws {
        let prepared = try CurlPreparedRequest(HTTPRequest(url: url), settings: .forTests())
        #expect(prepared.pathStart == start)
        #expect(prepared.hasPlainPath == plain)
        #expect(prepared.hasNoQueryOrFragment == noQuery)
        #expect(prepared.urlCount == url.utf8.count)
    }

    @Test("preparing refuses http:// unless the client allows h2c, and takes the client's timeout unless the request has one")
    func preparedChecks() throws {
        #expect(throws: HTTPTransportError.invalidRequest("http:// URLs are not allowed (TLS only)")) {
            try CurlPreparedRequest(HTTPRequest(url: "HTTP://a.example/"), settings: .forTests())
        }
        let h2c = try CurlPreparedRequest(HTTPRequest(url: "http://a.example/"), settings: .forTests(allowCleartextHTTP2: true))
        #expect(h2c.cleartext)
        #expect(h2c.timeoutMS == 10_000)
        #expect(try CurlPreparedRequest(HTTPRequest(url: "https://a.example/", timeout: .milliseconds(1500)), settings: .forTests()).timeoutMS == 1500)
        #expect(throws: HTTPTransportError.self) {
            try CurlPreparedRequest(HTTPRequest(url: "https://a.example/", headers: [HTTPHeader(name: "x", value: "a\r\nb: c")]), settings: .forTests())
        }
    }

    @Test("the byte masks are the character sets they stand for")
    func masks() {
        #expect(HTTPRequestValidation.tokenLow == HTTPRequestValidation.mask("!#$%&'*+-.0123456789", offset: 0))
        #expect(HTTPRequestValidation.tokenHigh == HTTPRequestValidation.mask("ABCDEFGHIJKLMNOPQRSTUVWXYZ^_`abcdefghijklmnopqrstuvwxyz|~", offset: 64))
        #expect(CurlTransfer.plainLow == HTTPRequestValidation.mask("!$&'()*+,-./0123456789:;=", offset: 0))
        #expect(CurlTransfer.plainHigh == HTTPRequestValidation.mask("@ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~", offset: 64))
    }

    @Test("http:// is recognised in any case, and only at the start", arguments: [
        ("http://a/", true), ("HTTP://a/", true), ("Http://a", true), ("https://a/", false), ("http:/a", false), ("", false),
        ("xhttp://a", false), ("http:", false),
    ])
    func cleartext(url: String, expected: Bool) {
        #expect(CurlTransfer.isCleartext(url) == expected)
    }

    @Test("content-type is recognised in any case", arguments: [
        ("content-type", true), ("Content-Type", true), ("CONTENT-TYPE", true), ("content-typ", false), ("content-types", false),
        ("x-content-type", false), ("content_type", false),
    ])
    func contentType(name: String, expected: Bool) {
        #expect(CurlTransfer.isContentType(name) == expected)
    }

    @Test("response header names are lower-cased (ASCII) and decoded as is when already lower-case", arguments: [
        ("apns-id", "apns-id"), ("Content-Length", "content-length"), ("X-ÄB", "x-Äb"), ("", ""),
    ])
    func lowercased(name: String, expected: String) {
        let bytes = Array(name.utf8)
        #expect(bytes.withUnsafeBytes { CurlTransfer.lowercasedASCII($0) } == expected)
    }

    @Test("a response header is found by its name in any case, without building a lower-cased copy", arguments: [
        ("apns-id", "APNS-ID", true), ("apns-id", "apns-id", true), ("retry-after", "Retry-After", true), ("apns-id", "apns-i", false),
        ("apns-id", "apns-idx", false), ("x-a", "x-b", false), ("", "", true),
    ])
    func headerLookup(stored: String, wanted: String, found: Bool) {
        #expect(HTTPResponse.equalLowercased(stored, wanted) == found)
        let response = HTTPResponse(status: 200, headers: [HTTPHeader(name: stored, value: "v")], body: [], httpVersion: 2, totalSeconds: 0)
        #expect((response.header(wanted) == "v") == found)
    }

    @Test("validation accepts every tchar in names and refuses separators, controls and non-ASCII", arguments: [
        ("!#$%&'*+-.^_`|~09azAZ", true), ("apns-topic", true), ("bad name", false), ("a:b", false), ("a\u{7F}", false),
        ("ä", false), ("(x)", false), ("a\"b", false),
    ])
    func headerNames(name: String, valid: Bool) {
        var passed = true
        do {
            try HTTPRequestValidation.validate(HTTPRequest(url: "https://a/", headers: [HTTPHeader(name: name, value: "v")]))
        } catch {
            passed = false
        }
        #expect(passed == valid, "\(name)")
    }

    @Test("validation refuses CR, LF and NUL in values and whitespace or controls in URLs", arguments: [
        HTTPRequest(url: "https://a/", headers: [HTTPHeader(name: "x", value: "a\rb")]),
        HTTPRequest(url: "https://a/", headers: [HTTPHeader(name: "x", value: "a\nb")]),
        HTTPRequest(url: "https://a/", headers: [HTTPHeader(name: "x", value: "a\u{0}b")]),
        HTTPRequest(url: "https://a/\tb"),
        HTTPRequest(url: "https://a/\u{7F}"),
        HTTPRequest(url: ""),
        HTTPRequest(method: "", url: "https://a/"),
    ])
    func refused(request: HTTPRequest) {
        #expect(throws: HTTPTransportError.self) { try HTTPRequestValidation.validate(request) }
    }

    @Test("the URL check eight bytes at a time and the token check agree with the byte tests for every byte value at every position")
    func urlWords() {
        for length in [1, 7, 8, 9, 16, 23] {
            for position in 0..<length {
                for value in 0...255 {
                    var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    bytes[position] = UInt8(value)
                    let expected = HTTPRequestValidation.isURLByte(UInt8(value))
                    #expect(bytes.withUnsafeBytes { HTTPRequestValidation.isValidURL($0) } == expected, "\(length) \(position) \(value)")
                }
            }
        }
        for length in [1, 7, 8, 9, 16, 23] {
            for position in 0..<length {
                for value in 0...255 {
                    var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    bytes[position] = UInt8(value)
                    let token = String(decoding: bytes, as: UTF8.self)
                    if Array(token.utf8) == bytes {
                        #expect(HTTPRequestValidation.isToken(token) == HTTPRequestValidation.isTokenByte(UInt8(value)), "token \(value)")
                    }
                }
            }
        }
        #expect(HTTPRequestValidation.isValidURL("https://api.push.apple.com/3/device/403e1c7799282dc803cad4c612f40ee9a7fc8e45fc28fa4f"))
        #expect(!HTTPRequestValidation.isValidURL("https://api.push.apple.com/3/device/403e1c7799282dc803 ad4c612f40ee9a7fc8e45fc28fa4f"))
    }

    @Test("validation accepts tabs and non-ASCII in values and non-ASCII bytes in URLs")
    func accepted() throws {
        try HTTPRequestValidation.validate(HTTPRequest(url: "https://a/ö?q=ü", headers: [HTTPHeader(name: "x", value: "a\tb ö")]))
    }
}

