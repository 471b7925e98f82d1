import COpenSSL

/// SHA-256 and HMAC-SHA256 (RFC 2104) one-shots.
public enum Digest {
    /// SHA-256 of `bytes`: 32 bytes.
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = bytes.withNonNullBytes { data, count in
            EVP_Digest(data, count, &out, &length, FetchedSHA256.shared.pointer, nil)
        }
        guard ok == 1, length == 32 else {
            OpenSSLErrors.clear()
            fatalError("EVP_Digest(SHA-256) failed: libcrypto is broken")
        }
        return out
    }

    /// HMAC-SHA256 of `message` under `key` (any length, empty allowed): 32 bytes.
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        let hmac = HMACSHA256()
        hmac.start(key: key)
        hmac.update(message)
        return hmac.finish()
    }
}

/// HKDF with SHA-256 (RFC 5869). A key schedule of several steps passes one `HMACSHA256`
/// context to all of them.
enum HKDF {
    static func extract(salt: [UInt8], inputKeyMaterial: [UInt8], using hmac: HMACSHA256 = HMACSHA256()) -> [UInt8] {
        hmac.start(key: salt)
        hmac.update(inputKeyMaterial)
        return hmac.finish()
    }

    /// `length` ≤ 255 × 32 bytes. T(i) = HMAC(PRK, T(i−1) || info || i), streamed without concatenating.
    static func expand(pseudoRandomKey: [UInt8], info: [UInt8], length: Int, using hmac: HMACSHA256 = HMACSHA256()) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(length)
        var previous: [UInt8] = []
        var counter: UInt8 = 1
        while output.count < length {
            hmac.start(key: pseudoRandomKey)
            hmac.update(previous)
            hmac.update(info)
            hmac.update(byte: counter)
            previous = hmac.finish()
            output += previous.prefix(length - output.count)
            counter &+= 1
        }
        return output
    }
}

/// Cryptographically secure random bytes from OpenSSL's DRBG.
public enum SecureRandom {
    /// `count` random bytes (empty for `count` ≤ 0).
    public static func bytes(_ count: Int) -> [UInt8] {
        guard count > 0 else { return [] }
        var out = [UInt8](repeating: 0, count: count)
        guard count <= Int(Int32.max), RAND_bytes(&out, Int32(count)) == 1 else {
            OpenSSLErrors.clear()
            fatalError("RAND_bytes failed: no secure randomness available")
        }
        return out
    }
}
