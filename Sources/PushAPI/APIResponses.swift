import PushHTTPServer

extension APIError {
    /// The answer: `status`, `application/json`, ``json``, ``headers``.
    public var response: HTTPListener.Response {
        HTTPListener.Response(status: status, contentType: APIResponses.jsonType, bytes: json, headers: headers)
    }
}

/// The API's success answers.
public enum APIResponses {
    public static let jsonType = "application/json"

    /// `status` with a JSON body.
    public static func json(_ status: Int, _ bytes: [UInt8], headers: [(String, String)] = []) -> HTTPListener.Response {
        HTTPListener.Response(status: status, contentType: jsonType, bytes: bytes, headers: headers)
    }
}
