/// Checks a request before any byte reaches libcurl: URLs may come from user-controlled Web
/// Push subscriptions, so control characters (header injection) and NULs (C-string
/// truncation) are refused rather than passed on.
enum HTTPRequestValidation {
    static func validate(_ request: HTTPRequest) throws(HTTPTransportError) {
        guard !request.method.isEmpty, request.method.utf8.allSatisfy(isTokenByte) else {
            throw .invalidRequest("invalid method")
        }
        guard !request.url.isEmpty, request.url.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else {
            throw .invalidRequest("URL is empty or contains whitespace or control characters")
        }
        for header in request.headers {
            guard !header.name.isEmpty, header.name.utf8.allSatisfy(isTokenByte) else {
                throw .invalidRequest("invalid header name")
            }
            guard header.value.utf8.allSatisfy({ $0 != 0x00 && $0 != 0x0A && $0 != 0x0D }) else {
                throw .invalidRequest("header \(header.name) contains CR, LF or NUL")
            }
        }
    }

    /// RFC 9110 §5.6.2 `tchar`.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
