/// A failure of a cryptographic operation or a rejected input (bad PEM, wrong key length,
/// truncated or tampered ciphertext). `message` never contains key material.
public struct CryptoError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, in words, possibly followed by OpenSSL's reason strings.
    public let message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
