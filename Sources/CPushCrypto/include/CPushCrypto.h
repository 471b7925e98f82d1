#ifndef PW_CPUSHCRYPTO_H
#define PW_CPUSHCRYPTO_H
#include <stddef.h>
#include <stdint.h>
/* C logic over libcrypto that PushCrypto calls in one step, prefixed pw_crypto_.
 * Only plain byte buffers cross this header: no OpenSSL type is exported. */

/* Results of pw_crypto_p256_ecdh. */
#define PW_CRYPTO_ECDH_OK 1
#define PW_CRYPTO_ECDH_FAILED 0         /* an OpenSSL failure (memory, RNG); see the error queue */
#define PW_CRYPTO_ECDH_BAD_PEER (-1)    /* ua_public is not an uncompressed point on P-256 */
#define PW_CRYPTO_ECDH_BAD_SCALAR (-2)  /* the given scalar is 0 or >= n */

/* RFC 8291 §3.1 sender-side ECDH on P-256, without EVP_PKEY objects (the EVP route wraps the
 * two scalar multiplications it needs in key objects, parameter import and provider look-ups,
 * for every message).
 *
 * ECDH (SEC 1 §3.3.1) of the application server's key k with the subscription's p256dh U:
 * secret_out = X(k·U), 32 bytes big-endian (SEC 1 §2.3.5); as_public_out = k·G, 65 bytes
 * uncompressed 0x04 || X || Y (SEC 1 §2.3.3), the keyid of RFC 8291 §3.1 / RFC 8188 §2.1.
 * scalar: NULL for a fresh random k in [1, n-1] (every message, RFC 8291 §3.1), or 32
 * big-endian bytes, which must lie in [1, n-1] (test vectors, RFC 8291 §5).
 * U must be uncompressed, on the curve and not the point at infinity (P-256 has cofactor 1,
 * so such a point has order n). Returns one of PW_CRYPTO_ECDH_*; on failure the outputs are
 * zeroed. k is cleared before it is freed. Thread-safe: the P-256 group is built once and
 * only read afterwards. */
int pw_crypto_p256_ecdh(const unsigned char ua_public[65], const unsigned char *scalar,
                        unsigned char as_public_out[65], unsigned char secret_out[32]);

/* SHA-256 compression (FIPS 180-4 §6.2.2) of block_count whole 64-byte blocks into the chaining
 * state (eight words, host order), through libcrypto's block function, which picks the CPU's
 * SHA extensions (SHA-NI) or SIMD code at start-up. No padding, no length: PushCore's SHA256 does
 * those and calls this through its SHA256BlockEngine. Thread-safe (no shared state). */
void pw_crypto_sha256_blocks(uint32_t state[8], const unsigned char *blocks, size_t block_count);

#endif
