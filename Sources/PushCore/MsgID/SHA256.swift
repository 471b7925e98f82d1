/// Compresses whole SHA-256 blocks (FIPS 180-4 §6.2.2) into a chaining state: what a hasher
/// hands to faster code than its own (PushCrypto's `LibcryptoSHA256Blocks`, the CPU's SHA
/// extensions through libcrypto). Padding, lengths and HMAC stay in ``SHA256``, so an engine is
/// one pure function and every engine gives the same digests (tests compare them).
public protocol SHA256BlockEngine: Sendable {
    /// `blocks.count` is a positive multiple of 64.
    func compress(_ state: inout SHA256.ChainingState, blocks: Span<UInt8>)
}

/// SHA-256 (FIPS 180-4 §6.2) in pure Swift, for msgID HMACs in the pure core.
///
/// Incremental: `update` any number of times, then `finalize`. A value type, so a prepared
/// state (e.g. HMAC's keyed inner/outer state) is copied cheaply and reused. Its block
/// compression is its own unless a ``SHA256BlockEngine`` is given.
public struct SHA256: Sendable {
    /// The eight chaining words H0…H7, in order.
    public struct ChainingState: Sendable {
        public var words: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) =
            (0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19)
    }

    public static let digestByteCount = 32
    public static let blockByteCount = 64

    private static let roundConstants: InlineArray<64, UInt32> = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    private var chaining = ChainingState()
    /// nil: this file's compression.
    fileprivate var engine: (any SHA256BlockEngine)?
    /// The bytes of an incomplete block, inline (no heap storage: a hasher, or a copy of
    /// HMAC's keyed state, allocates nothing until `finalize` returns the digest).
    private var buffer = InlineArray<64, UInt8>(repeating: 0)
    private var bufferCount = 0
    private var totalBytes: UInt64 = 0

    public init() {}

    /// A hasher whose blocks `engine` compresses.
    public init(engine: (any SHA256BlockEngine)?) { self.engine = engine }

    /// The digest of `bytes` in one call.
    public static func hash<Bytes: Sequence>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// The digest of a string's UTF-8 bytes, without copying them.
    public static func hash(utf8 text: String) -> [UInt8] {
        let digest = inlineHash(utf8: text)
        return (0..<digestByteCount).map { digest[$0] }
    }

    /// ``hash(utf8:)`` as 32 inline bytes: no heap allocation (the token hash of every recipient).
    public static func inlineHash(utf8 text: String, engine: (any SHA256BlockEngine)? = nil) -> InlineArray<32, UInt8> {
        var text = text
        return text.withUTF8 { bytes in
            var hasher = SHA256(engine: engine)
            hasher.update(bytes.span)
            return hasher.finalizeInline()
        }
    }

    /// The longest input ``inlineHash(_:_:engine:)`` pads on the stack: 4 blocks less the
    /// padding's 9 bytes.
    static let oneShotCapacity = 4 * blockByteCount - 9

    /// The digest of `first` followed by `second`, for short inputs in one pass: both are copied
    /// once into a padded buffer on the stack and all its blocks compressed in one call (one
    /// engine call), instead of being buffered byte by byte (a replace key per recipient:
    /// prefix + msgId). Inputs longer than 247 bytes together go through ``update(_:)``.
    public static func inlineHash(_ first: Span<UInt8>, _ second: Span<UInt8>, engine: (any SHA256BlockEngine)? = nil)
        -> InlineArray<32, UInt8> {
        let count = first.count + second.count
        var hasher = SHA256(engine: engine)
        guard count <= oneShotCapacity else {
            hasher.update(first)
            hasher.update(second)
            return hasher.finalizeInline()
        }
        var padded = InlineArray<256, UInt8>(repeating: 0)
        for index in first.indices { padded[index] = first[index] }
        for index in second.indices { padded[first.count &+ index] = second[index] }
        padded[count] = 0x80
        let end = (count &+ 9 &+ 63) & ~63
        let bitLength = UInt64(count) &* 8
        for offset in 0..<8 { padded[end &- 1 &- offset] = UInt8(truncatingIfNeeded: bitLength &>> UInt64(offset &* 8)) }
        let blocks = padded.span.extracting(0..<end)
        if let engine {
            engine.compress(&hasher.chaining, blocks: blocks)
        } else {
            var start = 0
            while start < end {
                hasher.compress(blocks, at: start)
                start &+= blockByteCount
            }
        }
        return hasher.digest()
    }

    public mutating func update<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        let array = Array(bytes)
        update(array.span)
    }

    public mutating func update(_ bytes: [UInt8]) { update(bytes.span) }

    public mutating func update(_ bytes: ArraySlice<UInt8>) { update(bytes.span) }

    /// Whole blocks are compressed straight from `bytes`; only a tail is buffered.
    public mutating func update(_ bytes: Span<UInt8>) {
        totalBytes &+= UInt64(bytes.count)
        var index = 0
        if bufferCount > 0 {
            let take = min(SHA256.blockByteCount - bufferCount, bytes.count)
            for offset in 0..<take { buffer[bufferCount + offset] = bytes[offset] }
            bufferCount += take
            index = take
            guard bufferCount == SHA256.blockByteCount else { return }
            compressBuffer()
        }
        let wholeBytes = (bytes.count - index) & ~(SHA256.blockByteCount - 1)
        if wholeBytes > 0 {
            if let engine {
                engine.compress(&chaining, blocks: bytes.extracting(index..<index + wholeBytes))
                index += wholeBytes
            } else {
                let end = index + wholeBytes
                while index < end {
                    compress(bytes, at: index)
                    index += SHA256.blockByteCount
                }
            }
        }
        while index < bytes.count {
            buffer[bufferCount] = bytes[index]
            bufferCount += 1
            index += 1
        }
    }

    public mutating func finalize() -> [UInt8] {
        let digest = finalizeInline()
        return (0..<SHA256.digestByteCount).map { digest[$0] }
    }

    /// ``finalize()`` as 32 inline bytes: no heap allocation (HMAC's inner digest, msgId tags,
    /// token hashes: several per recipient).
    public mutating func finalizeInline() -> InlineArray<32, UInt8> {
        let bitLength = totalBytes &* 8
        buffer[bufferCount] = 0x80
        bufferCount += 1
        if bufferCount > 56 {
            while bufferCount < 64 { buffer[bufferCount] = 0; bufferCount += 1 }
            compressBuffer()
        }
        while bufferCount < 56 { buffer[bufferCount] = 0; bufferCount += 1 }
        for shift in stride(from: 56, through: 0, by: -8) {
            buffer[bufferCount] = UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))
            bufferCount += 1
        }
        compressBuffer()
        return digest()
    }

    /// The chaining words as the 32 digest bytes, big-endian.
    @inline(__always)
    private func digest() -> InlineArray<32, UInt8> {
        let state = chaining.words
        let words: InlineArray<8, UInt32> = [state.0, state.1, state.2, state.3, state.4, state.5, state.6, state.7]
        var digest = InlineArray<32, UInt8>(repeating: 0)
        for index in 0..<8 {
            let word = words[index]
            digest[index * 4] = UInt8(truncatingIfNeeded: word >> 24)
            digest[index * 4 + 1] = UInt8(truncatingIfNeeded: word >> 16)
            digest[index * 4 + 2] = UInt8(truncatingIfNeeded: word >> 8)
            digest[index * 4 + 3] = UInt8(truncatingIfNeeded: word)
        }
        return digest
    }

    private mutating func compressBuffer() {
        let block = buffer
        if let engine {
            engine.compress(&chaining, blocks: block.span)
        } else {
            compress(block.span, at: 0)
        }
        bufferCount = 0
    }

    /// One block (FIPS 180-4 §6.2.2). The whole 64-word message schedule is expanded first, inline;
    /// the rounds are unrolled by eight with the working variables renamed instead of shifted
    /// (`round(a, b, c, &d, e, f, g, &h)`, then `round(h, a, b, &c, …)`: no eight moves per
    /// round), Ch and Maj in their three-operation forms, the round constants from a local copy,
    /// rotations as masking shifts (one `ror`). This runs four times per recipient (token hash,
    /// msgId HMAC).
    private mutating func compress(_ block: Span<UInt8>, at start: Int) {
        let constants = SHA256.roundConstants
        var schedule = InlineArray<64, UInt32>(repeating: 0)
        let words = block.extracting(start..<start + SHA256.blockByteCount)
        for index in 0..<16 {
            let offset = index &* 4
            schedule[index] = UInt32(words[offset]) &<< 24 | UInt32(words[offset &+ 1]) &<< 16
                | UInt32(words[offset &+ 2]) &<< 8 | UInt32(words[offset &+ 3])
        }
        for index in 16..<64 {
            let word15 = schedule[index &- 15], word2 = schedule[index &- 2]
            let sigma0 = Self.rotateRight(word15, 7) ^ Self.rotateRight(word15, 18) ^ (word15 &>> 3)
            let sigma1 = Self.rotateRight(word2, 17) ^ Self.rotateRight(word2, 19) ^ (word2 &>> 10)
            schedule[index] = schedule[index &- 16] &+ sigma0 &+ schedule[index &- 7] &+ sigma1
        }
        let state = chaining.words
        var (a, b, c, d, e, f, g, h) = state
        var index = 0
        while index < 64 {
            Self.round(a, b, c, &d, e, f, g, &h, constants[index] &+ schedule[index])
            Self.round(h, a, b, &c, d, e, f, &g, constants[index &+ 1] &+ schedule[index &+ 1])
            Self.round(g, h, a, &b, c, d, e, &f, constants[index &+ 2] &+ schedule[index &+ 2])
            Self.round(f, g, h, &a, b, c, d, &e, constants[index &+ 3] &+ schedule[index &+ 3])
            Self.round(e, f, g, &h, a, b, c, &d, constants[index &+ 4] &+ schedule[index &+ 4])
            Self.round(d, e, f, &g, h, a, b, &c, constants[index &+ 5] &+ schedule[index &+ 5])
            Self.round(c, d, e, &f, g, h, a, &b, constants[index &+ 6] &+ schedule[index &+ 6])
            Self.round(b, c, d, &e, f, g, h, &a, constants[index &+ 7] &+ schedule[index &+ 7])
            index &+= 8
        }
        chaining.words = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d,
                          state.4 &+ e, state.5 &+ f, state.6 &+ g, state.7 &+ h)
    }

    /// One round: `h` becomes the new `a` (T1 + T2) and `d` the new `e` (d + T1); the caller
    /// renames the other six.
    @inline(__always)
    private static func round(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: inout UInt32,
                              _ e: UInt32, _ f: UInt32, _ g: UInt32, _ h: inout UInt32, _ constantPlusWord: UInt32) {
        let bigSigma1 = rotateRight(e, 6) ^ rotateRight(e, 11) ^ rotateRight(e, 25)
        let choice = g ^ (e & (f ^ g))
        let temp1 = h &+ bigSigma1 &+ choice &+ constantPlusWord
        let bigSigma0 = rotateRight(a, 2) ^ rotateRight(a, 13) ^ rotateRight(a, 22)
        let majority = (a & b) | (c & (a | b))
        d = d &+ temp1
        h = temp1 &+ bigSigma0 &+ majority
    }

    @inline(__always)
    private static func rotateRight(_ value: UInt32, _ count: UInt32) -> UInt32 { (value &>> count) | (value &<< (32 &- count)) }
}

/// HMAC-SHA256 (RFC 2104, test vectors RFC 4231). The keyed inner and outer states are
/// computed once per key, so each MAC costs only the message's compressions plus two.
public struct HMACSHA256: Sendable {
    private var inner = SHA256()
    private var outer = SHA256()

    public init(key: [UInt8], engine: (any SHA256BlockEngine)? = nil) {
        var block = key.count > SHA256.blockByteCount ? SHA256.hash(key) : key
        block += [UInt8](repeating: 0, count: SHA256.blockByteCount - block.count)
        inner = SHA256(engine: engine)
        outer = SHA256(engine: engine)
        inner.update(block.map { $0 ^ 0x36 })
        outer.update(block.map { $0 ^ 0x5c })
    }

    /// The same keyed states, their later blocks compressed by `engine` (the states do not
    /// depend on who compressed the key block: every engine computes the same function).
    public func using(engine: (any SHA256BlockEngine)?) -> HMACSHA256 {
        var copy = self
        copy.inner.engine = engine
        copy.outer.engine = engine
        return copy
    }

    /// The 32-byte tag of `message`.
    public func authenticationCode<Bytes: Sequence>(for message: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        authenticationCode(for: Array(message)[...])
    }

    public func authenticationCode(for message: [UInt8]) -> [UInt8] { authenticationCode(for: message[...]) }

    public func authenticationCode(for message: ArraySlice<UInt8>) -> [UInt8] {
        let tag = inlineAuthenticationCode(for: message.span)
        return (0..<SHA256.digestByteCount).map { tag[$0] }
    }

    /// The 32-byte tag of `message` as inline bytes: no heap allocation for it or for the inner
    /// digest (one msgId per recipient).
    public func inlineAuthenticationCode(for message: Span<UInt8>) -> InlineArray<32, UInt8> {
        var innerHash = inner
        innerHash.update(message)
        let innerDigest = innerHash.finalizeInline()
        var outerHash = outer
        outerHash.update(innerDigest.span)
        return outerHash.finalizeInline()
    }

    /// One-shot HMAC-SHA256.
    public static func authenticationCode(key: [UInt8], message: [UInt8]) -> [UInt8] {
        HMACSHA256(key: key).authenticationCode(for: message)
    }

    /// Compares in time independent of where the first difference is.
    public static func constantTimeEquals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in 0..<lhs.count { difference |= lhs[index] ^ rhs[index] }
        return difference == 0
    }
}
