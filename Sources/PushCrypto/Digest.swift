import COpenSSL

/// SHA-256 and HMAC-SHA256 (RFC 2104) one-shots.
public enum Digest {
    /// SHA-256 of `bytes`: 32 bytes.
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = bytes.withNonNullBytes { data, count in
            EVP_Digest(data, count, &out, &length, EVP_sha256(), nil)
        }
        guard ok == 1, length == 32 else {
            OpenSSLErrors.clear()
            fatalError("EVP_Digest(SHA-256) failed: libcrypto is broken")
        }
        return out
    }

    /// HMAC-SHA256 of `message` under `key` (any length, empty allowed): 32 bytes.
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let result = key.withNonNullBytes { keyBytes, keyCount in
            message.withNonNullBytes { data, count in
                HMAC(EVP_sha256(), keyBytes, Int32(keyCount), data, count, &out, &length)
            }
        }
        guard result != nil, length == 32 else {
            OpenSSLErrors.clear()
            fatalError("HMAC(SHA-256) failed: libcrypto is broken")
        }
        return out
    }
}

/// HKDF with SHA-256 (RFC 5869).
enum HKDF {
    static func extract(salt: [UInt8], inputKeyMaterial: [UInt8]) -> [UInt8] {
        Digest.hmacSHA256(key: salt, message: inputKeyMaterial)
    }

    /// `length` ≤ 255 × 32 bytes.
    static func expand(pseudoRandomKey: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(length + 32)
        var previous: [UInt8] = []
        var counter: UInt8 = 1
        while output.count < length {
            previous = Digest.hmacSHA256(key: pseudoRandomKey, message: previous + info + [counter])
            output += previous
            counter &+= 1
        }
        return Array(output.prefix(length))
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
