/// PushCrypto: JWTs (ES256, RS256), RFC 8291 Web Push encryption, HMAC, over OpenSSL 3 libcrypto.
///
/// All OpenSSL handles live in `OpenSSL/`; every public type here speaks Swift values only.
public enum PushCryptoModule {}
