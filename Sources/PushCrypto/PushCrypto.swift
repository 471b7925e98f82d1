/// PushCrypto: JWTs (ES256, RS256), RFC 8291 Web Push encryption, HMAC, over libcrypto.
public enum PushCryptoModule {}
