#if canImport(Glibc)
import Glibc
#endif

/// Checks a request before any byte reaches libcurl: URLs may come from user-controlled Web
/// Push subscriptions, so control characters (header injection) and NULs (C-string
/// truncation) are refused rather than passed on.
enum HTTPRequestValidation {
    static func validate(_ request: HTTPRequest) throws(HTTPTransportError) {
        guard !request.method.isEmpty, allBytes(of: request.method, satisfy: isTokenByte) else {
            throw .invalidRequest("invalid method")
        }
        guard !request.url.isEmpty, allBytes(of: request.url, satisfy: isURLByte) else {
            throw .invalidRequest("URL is empty or contains whitespace or control characters")
        }
        for header in request.headers {
            guard !header.name.isEmpty, allBytes(of: header.name, satisfy: isTokenByte) else {
                throw .invalidRequest("invalid header name")
            }
            guard isValidValue(header.value) else {
                throw .invalidRequest("header \(header.name) contains CR, LF or NUL")
            }
        }
    }

    /// RFC 9110 §5.6.2 `tchar`, as two 64-bit masks (a bit per ASCII byte 0-63, 64-127):
    /// ``mask(_:offset:)`` of "!#$%&'*+-.0123456789" and of the letters, "^_`|~". Literals, so
    /// that no lazy global initialisation check runs per byte (`RequestBuildingTests` checks them).
    static let tokenLow: UInt64 = 0x03FF_6CFA_0000_0000
    static let tokenHigh: UInt64 = 0x57FF_FFFF_C7FF_FFFE

    static func mask(_ characters: String, offset: UInt8) -> UInt64 {
        var mask: UInt64 = 0
        for byte in characters.utf8 { mask |= 1 << UInt64(byte - offset) }
        return mask
    }

    @inline(__always)
    static func isTokenByte(_ byte: UInt8) -> Bool {
        byte < 64 ? (tokenLow >> UInt64(byte)) & 1 != 0 : byte < 128 ? (tokenHigh >> UInt64(byte - 64)) & 1 != 0 : false
    }

    /// Visible ASCII or any non-ASCII byte: no space, no control character, no DEL.
    @inline(__always)
    static func isURLByte(_ byte: UInt8) -> Bool { byte > 0x20 && byte != 0x7F }

    /// Anything but the bytes that would end or split a header line (CR, LF, NUL).
    @inline(__always)
    static func isValueByte(_ byte: UInt8) -> Bool { byte != 0x00 && byte != 0x0A && byte != 0x0D }

    /// No CR, LF or NUL (`memchr`: values are the bulk of a request's header bytes).
    static func isValidValue(_ value: String) -> Bool {
        if let result = value.utf8.withContiguousStorageIfAvailable({ bytes -> Bool in
            guard let base = bytes.baseAddress else { return true }
            return memchr(base, 0x0D, bytes.count) == nil && memchr(base, 0x0A, bytes.count) == nil && memchr(base, 0x00, bytes.count) == nil
        }) { return result }
        return value.utf8.allSatisfy(isValueByte)
    }

    /// Every UTF-8 byte of `text` satisfies `test` (one pass over the contiguous bytes of a native string).
    @inline(__always)
    static func allBytes(of text: String, satisfy test: (UInt8) -> Bool) -> Bool {
        if let result = text.utf8.withContiguousStorageIfAvailable({ bytes in bytes.allSatisfy(test) }) { return result }
        return text.utf8.allSatisfy(test)
    }
}
