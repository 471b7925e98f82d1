import Foundation
import PushAPI
import PushEncoding
import Testing

/// The OpenAPI document: served = committed (docs/reference/openapi.json), valid JSON, every
/// endpoint and every error code in it; the error body's shape.
@Suite("API OpenAPI document and error shapes")
struct OpenAPIDocumentTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var document: JSONObject {
        get throws { try #require(try JSONParser.parse(OpenAPIDocument.text).objectValue) }
    }

    @Test("the served document is docs/reference/openapi.json byte for byte (regenerate: pushworker api --openapi > docs/reference/openapi.json)")
    func committed() throws {
        let committed = try String(contentsOf: Self.root.appendingPathComponent("docs/reference/openapi.json"), encoding: .utf8)
        #expect(committed == OpenAPIDocument.text)
    }

    @Test("OpenAPI 3.1 with every endpoint, each operation with its errors; every error code the API answers is in the Error schema")
    func content() throws {
        let document = try Self.document
        #expect(document["openapi"]?.stringValue == "3.1.0")
        let paths = try #require(document["paths"]?.objectValue)
        let expected: [(String, String)] = [
            ("/v1/jobs", "post"), ("/v1/campaigns/{app}/{campaign}", "get"), ("/v1/campaigns/{app}/{campaign}/pause", "post"),
            ("/v1/campaigns/{app}/{campaign}/resume", "post"), ("/v1/campaigns/{app}/{campaign}/cancel", "post"),
            ("/v1/campaigns/{app}/{campaign}/throttle", "put"), ("/v1/campaigns/{app}/{campaign}/deadline", "put"),
            ("/healthz", "get"), ("/readyz", "get"), ("/metrics", "get"), ("/openapi.json", "get"),
        ]
        #expect(Set(paths.keys) == Set(expected.map(\.0)))
        for (path, method) in expected {
            let operation = try #require(paths[path]?.objectValue?[method]?.objectValue, "\(method) \(path)")
            let codes = operation["responses"]?.objectValue?.keys ?? []
            #expect(codes.contains("404") && codes.contains("405"), "\(path)")
            if path.hasPrefix("/v1/") {
                #expect(["400", "401", "500", "503"].allSatisfy(codes.contains), "\(path): \(codes)")
            } else {
                #expect(operation["security"]?.arrayValue?.isEmpty == true, "\(path) needs no token")
            }
            if method != "get" { #expect(["413", "415", "422"].allSatisfy(codes.contains), "\(path): \(codes)") }
        }
        let codeSchema = document["components"]?.objectValue?["schemas"]?.objectValue?["Error"]?.objectValue?["properties"]?
            .objectValue?["error"]?.objectValue?["properties"]?.objectValue?["code"]?.objectValue
        let errorCodes = (codeSchema?["enum"]?.arrayValue ?? []).compactMap { $0.stringValue }
        #expect(Set(errorCodes) == Set(Self.everyError.map(\.code)))
    }

    static let everyError: [APIError] = [
        .notFound("/x"), .methodNotAllowed("GET", allow: "POST"), .unauthorized(presented: false), .bodyTooLarge(maximum: 1),
        .unsupportedMediaType("text/plain"), .invalidJSON("x"), .invalidPath("app", "x"), .invalidField("$.a", "x"),
        .invalidJobs([.init(field: "$.a", message: "x")], omitted: 0, invalidJobs: 1, of: 1), .jobTooLarge(field: "$", detail: "x"),
        .campaignCancelled, .invalidIdempotencyKey(), .idempotencyKeyReused(), .idempotencyKeyInUse(), .redisUnavailable("x"),
        .kafkaUnavailable("x"), .internalError("x"),
    ]

    @Test("every error body is {\"error\": {\"code\", \"message\", \"field\"?, \"problems\"?}}, application/json, with its headers")
    func errorShape() throws {
        for error in Self.everyError {
            let object = try #require(try JSONParser.parse(error.json).objectValue)
            #expect(object.keys == ["error"])
            let inner = try #require(object["error"]?.objectValue)
            #expect(inner["code"]?.stringValue == error.code && inner["message"]?.stringValue?.isEmpty == false)
            #expect(Set(inner.keys).isSubset(of: ["code", "message", "field", "problems"]))
            #expect(error.response.contentType == "application/json" && error.response.status == error.status)
            #expect((400...599).contains(error.status))
        }
        #expect(APIError.unauthorized(presented: true).headers.contains { $0 == ("WWW-Authenticate", #"Bearer realm="pushworker", error="invalid_token""#) })
        #expect(APIError.methodNotAllowed("GET", allow: "POST").headers.contains { $0 == ("Allow", "POST") })
        let jobs = try #require(try JSONParser.parse(APIError.invalidJobs([.init(field: "$.recipients[3]", message: "expected an object, got number")],
                                                                          omitted: 2, invalidJobs: 1, of: 1).json).objectValue?["error"]?.objectValue)
        #expect(jobs["field"]?.stringValue == "$.recipients[3]")
        #expect(jobs["problems"]?.arrayValue?.first?.objectValue?.keys == ["field", "message"])
        #expect(jobs["message"]?.stringValue?.contains("2 more problems not listed") == true)
    }
}
