import CPushCrypto
import PushCore

/// SHA-256 block compression by libcrypto (`pw_crypto_sha256_blocks`, the CPushCrypto target),
/// which uses the CPU's SHA extensions (SHA-NI) where it has them and SIMD code otherwise: the
/// msgId HMAC and the token hash of every recipient run four blocks, which PushCore's own
/// compression does in portable scalar Swift. PushCore's `SHA256` keeps the padding, lengths and
/// HMAC states, so digests are the same bytes with or without it (`SHA256EngineTests`).
public struct LibcryptoSHA256Blocks: SHA256BlockEngine {
    public init() {}

    public func compress(_ state: inout SHA256.ChainingState, blocks: Span<UInt8>) {
        precondition(blocks.count % SHA256.blockByteCount == 0, "whole blocks only")
        blocks.withUnsafeBufferPointer { bytes in
            withUnsafeMutablePointer(to: &state.words) { words in
                words.withMemoryRebound(to: UInt32.self, capacity: 8) { first in
                    pw_crypto_sha256_blocks(first, bytes.baseAddress, bytes.count / SHA256.blockByteCount)
                }
            }
        }
    }
}
