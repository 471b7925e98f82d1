import COpenSSL

/// The calling thread's OpenSSL error queue. Every failure path drains it, so that a stale
/// entry never leaks into an unrelated later call on the same thread (libcurl's TLS code
/// reads the same queue).
enum OpenSSLErrors {
    static func clear() {
        ERR_clear_error()
    }

    /// A `CryptoError` for `what`, with up to three OpenSSL reason strings; drains the queue.
    static func error(_ what: String) -> CryptoError {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            if reasons.count < 3 {
                var buffer = [CChar](repeating: 0, count: 256)
                ERR_error_string_n(code, &buffer, buffer.count)
                let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
                reasons.append(String(decoding: bytes, as: UTF8.self))
            }
        }
        return CryptoError(reasons.isEmpty ? what : "\(what) (\(reasons.joined(separator: "; ")))")
    }

    /// What an OpenSSL `i2d_*` function writes (DER): asked for its length first (a nil output),
    /// then written into a buffer of that size. A failure is `failure`'s error, with OpenSSL's
    /// queue drained into it.
    static func encoded(_ failure: String,
                        _ i2d: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) throws(CryptoError) -> [UInt8] {
        let count = i2d(nil)
        guard count > 0 else { throw error(failure) }
        var out = [UInt8](repeating: 0, count: Int(count))
        let written = out.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d(&cursor)
        }
        guard written == count else { throw error(failure) }
        return out
    }
}

extension Array where Element == UInt8 {
    /// Calls `body` with a non-null pointer even for an empty array (some OpenSSL 3.0
    /// functions reject a NULL buffer of length 0).
    func withNonNullBytes<R>(_ body: (UnsafePointer<UInt8>, Int) -> R) -> R {
        withUnsafeBufferPointer { buffer in
            if let base = buffer.baseAddress { return body(base, buffer.count) }
            var zero: UInt8 = 0
            return withUnsafePointer(to: &zero) { body($0, 0) }
        }
    }
}

/// A NUL-terminated C string with static lifetime, for OpenSSL calls that keep the pointer
/// (`OSSL_PARAM_BLD_push_*` key names and values, `EVP_PKEY_CTX_new_from_name`): a Swift
/// `String` bridged to `const char *` is only valid for the duration of the call.
func cString(_ literal: StaticString) -> UnsafePointer<CChar> {
    UnsafeRawPointer(literal.utf8Start).assumingMemoryBound(to: CChar.self)
}
