#if canImport(Glibc)
import Glibc
#endif

/// Checks a request before any byte reaches libcurl: URLs may come from user-controlled Web
/// Push subscriptions, so control characters (header injection) and NULs (C-string
/// truncation) are refused rather than passed on.
enum HTTPRequestValidation {
    static func validate(_ request: HTTPRequest) throws(HTTPTransportError) {
        try validateMethodAndURL(request)
        for header in request.headers { try validate(header) }
        // A shared block's fields were checked when it was made (HTTPHeaderBlock.init).
    }

    static func validateMethodAndURL(_ request: HTTPRequest) throws(HTTPTransportError) {
        guard !request.method.isEmpty, isToken(request.method) else {
            throw .invalidRequest("invalid method")
        }
        guard !request.url.isEmpty, isValidURL(request.url) else {
            throw .invalidRequest("URL is empty or contains whitespace or control characters")
        }
    }

    @inline(__always)
    static func validate(_ header: HTTPHeader) throws(HTTPTransportError) {
        guard !header.name.isEmpty, isToken(header.name) else {
            throw .invalidRequest("invalid header name")
        }
        guard isValidValue(header.value) else {
            throw .invalidRequest("header \(header.name) contains CR, LF or NUL")
        }
    }

    /// Every byte is a ``isTokenByte(_:)`` (one pass, no branch per byte: bit 6 picks the mask,
    /// the low six bits the position, bit 7 fails).
    static func isToken(_ text: String) -> Bool {
        if let result = text.utf8.withContiguousStorageIfAvailable({ bytes -> Bool in
            let low = tokenLow, high = tokenHigh
            var bits: UInt64 = 1
            for byte in bytes { bits &= ((byte & 64 == 0 ? low : high) >> UInt64(byte & 63)) & ~UInt64(byte >> 7) }
            return bits & 1 != 0
        }) { return result }
        return text.utf8.allSatisfy(isTokenByte)
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

    /// Every byte is a ``isURLByte(_:)``: eight at a time (a word has a byte below 0x21 when
    /// `(w - 0x21…21) & ~w & 0x80…80` is non-zero, a 0x7F byte when `w ^ 0x7F…7F` has a zero
    /// byte; both tests are exact for the word as a whole), the rest one by one.
    static func isValidURL(_ url: String) -> Bool {
        if let result = url.utf8.withContiguousStorageIfAvailable({ bytes -> Bool in
            guard let base = bytes.baseAddress else { return true }
            return isValidURL(UnsafeRawBufferPointer(start: base, count: bytes.count))
        }) { return result }
        return url.utf8.allSatisfy(isURLByte)
    }

    static func isValidURL(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        var index = 0
        while index + 8 <= bytes.count {
            let word = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            let below = (word &- ones &* 0x21) & ~word & highs
            let del = word ^ (ones &* 0x7F)
            let zero = (del &- ones) & ~del & highs
            if below | zero != 0 { return false }
            index += 8
        }
        while index < bytes.count {
            if !isURLByte(bytes[index]) { return false }
            index += 1
        }
        return true
    }

    /// Anything but the bytes that would end or split a header line (CR, LF, NUL).
    @inline(__always)
    static func isValueByte(_ byte: UInt8) -> Bool { byte != 0x00 && byte != 0x0A && byte != 0x0D }

    /// No CR, LF or NUL (`memchr`: values are the bulk of a request's header bytes, and libc's
    /// vectorised `memchr` scans many bytes per step where a Swift loop takes one or a word).
    static func isValidValue(_ value: String) -> Bool {
        if let result = value.utf8.withContiguousStorageIfAvailable({ bytes -> Bool in
            guard let base = bytes.baseAddress else { return true }
            return memchr(base, 0x0D, bytes.count) == nil && memchr(base, 0x0A, bytes.count) == nil && memchr(base, 0x00, bytes.count) == nil
        }) { return result }
        return value.utf8.allSatisfy(isValueByte)
    }
}
