#ifndef PW_COPENSSL_SHIM_H
#define PW_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/crypto.h>
#include "shim_tls.h"
/* Typed wrappers for function-like macros, prefixed pw_ssl_. */
static inline void pw_ssl_free(void *p) { OPENSSL_free(p); }
static inline EVP_PKEY *pw_ssl_ec_gen(const char *curve) { return EVP_EC_gen(curve); }
static inline long pw_ssl_ctx_set_options(SSL_CTX *ctx, uint64_t op) { return (long)SSL_CTX_set_options(ctx, op); }
static inline int pw_ssl_ctx_set_min_proto_tls12(SSL_CTX *ctx) { return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION); }
static inline int pw_ssl_set_tlsext_host_name(SSL *s, const char *name) { return (int)SSL_set_tlsext_host_name(s, name); }
/* Key-selection constants (composite macros), for EVP_PKEY_fromdata. */
static inline int pw_ssl_selection_keypair(void) { return EVP_PKEY_KEYPAIR; }
static inline int pw_ssl_selection_public_key(void) { return EVP_PKEY_PUBLIC_KEY; }
/* AEAD tag control codes, for EVP_CIPHER_CTX_ctrl. */
static inline int pw_ssl_ctrl_gcm_get_tag(void) { return EVP_CTRL_GCM_GET_TAG; }
static inline int pw_ssl_ctrl_gcm_set_tag(void) { return EVP_CTRL_GCM_SET_TAG; }
/* ---- RFC 8291 §3.1 sender-side ECDH on P-256, without EVP_PKEY objects ----
 * The EVP route (EVP_EC_gen, reading the key back, EVP_PKEY_fromdata for the subscription
 * key, EVP_PKEY_derive) costs about three times the two scalar multiplications it needs.
 * Only non-deprecated OpenSSL 3.0 EC_GROUP / EC_POINT / BN calls are used. */

/* Results of pw_ssl_p256_ecdh. */
#define PW_SSL_ECDH_OK 1
#define PW_SSL_ECDH_FAILED 0         /* an OpenSSL failure (memory, RNG); see the error queue */
#define PW_SSL_ECDH_BAD_PEER (-1)    /* ua_public is not an uncompressed point on P-256 */
#define PW_SSL_ECDH_BAD_SCALAR (-2)  /* the given scalar is 0 or >= n */

/* Slot for the shared group (a function-local static, so Swift sees no mutable global). */
static inline EC_GROUP **pw_ssl_p256_group_slot(void) {
    static EC_GROUP *group = NULL;
    return &group;
}
static inline void pw_ssl_p256_group_init(void) {
    *pw_ssl_p256_group_slot() = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
}
/* The P-256 group, built once (thread-safe) and kept for the process lifetime; NULL if it
 * could not be built. EC_POINT_* operations only read a group, so threads share it. */
static inline const EC_GROUP *pw_ssl_p256_group(void) {
    static CRYPTO_ONCE once = CRYPTO_ONCE_STATIC_INIT;
    if (CRYPTO_THREAD_run_once(&once, pw_ssl_p256_group_init) != 1) return NULL;
    return *pw_ssl_p256_group_slot();
}

/* ECDH (SEC 1 §3.3.1) of the application server's key k with the subscription's p256dh U:
 * secret_out = X(k·U), 32 bytes big-endian (SEC 1 §2.3.5); as_public_out = k·G, 65 bytes
 * uncompressed 0x04 || X || Y (SEC 1 §2.3.3), the keyid of RFC 8291 §3.1 / RFC 8188 §2.1.
 * scalar: NULL for a fresh random k in [1, n-1] (every message, RFC 8291 §3.1), or 32
 * big-endian bytes, which must lie in [1, n-1] (test vectors, RFC 8291 §5).
 * U must be uncompressed, on the curve and not the point at infinity (P-256 has cofactor 1,
 * so such a point has order n). Returns one of PW_SSL_ECDH_*; on failure the outputs are
 * zeroed. k is cleared before it is freed. */
static inline int pw_ssl_p256_ecdh(const unsigned char ua_public[65], const unsigned char *scalar,
                                   unsigned char as_public_out[65], unsigned char secret_out[32]) {
    const EC_GROUP *group = pw_ssl_p256_group();
    if (group == NULL) return PW_SSL_ECDH_FAILED;
    const BIGNUM *order = EC_GROUP_get0_order(group);
    int result = PW_SSL_ECDH_FAILED;
    BN_CTX *ctx = BN_CTX_secure_new();
    BIGNUM *k = BN_secure_new();
    BIGNUM *x = BN_secure_new();
    EC_POINT *u = EC_POINT_new(group), *a = EC_POINT_new(group), *s = EC_POINT_new(group);
    if (ctx == NULL || k == NULL || x == NULL || u == NULL || a == NULL || s == NULL) goto done;
    /* The peer first: a bad subscription key costs no scalar multiplication. oct2point
     * refuses a point not on the curve; the tag check refuses the 65-byte hybrid forms. */
    if (ua_public[0] != POINT_CONVERSION_UNCOMPRESSED || EC_POINT_oct2point(group, u, ua_public, 65, ctx) != 1
        || EC_POINT_is_at_infinity(group, u)) {
        result = PW_SSL_ECDH_BAD_PEER;
        goto done;
    }
    BN_set_flags(k, BN_FLG_CONSTTIME);
    if (scalar != NULL) {
        if (BN_bin2bn(scalar, 32, k) == NULL) goto done;
        if (BN_is_zero(k) || BN_cmp(k, order) >= 0) {
            result = PW_SSL_ECDH_BAD_SCALAR;
            goto done;
        }
    } else {
        do {  /* uniform in [0, n-1]; 0 is redrawn */
            if (BN_priv_rand_range_ex(k, order, 0, ctx) != 1) goto done;
        } while (BN_is_zero(k));
    }
    if (EC_POINT_mul(group, a, k, NULL, NULL, ctx) != 1
        || EC_POINT_point2oct(group, a, POINT_CONVERSION_UNCOMPRESSED, as_public_out, 65, ctx) != 65
        || EC_POINT_mul(group, s, NULL, u, k, ctx) != 1
        || EC_POINT_get_affine_coordinates(group, s, x, NULL, ctx) != 1
        || BN_bn2binpad(x, secret_out, 32) != 32)
        goto done;
    result = PW_SSL_ECDH_OK;
done:
    if (result != PW_SSL_ECDH_OK) {
        OPENSSL_cleanse(as_public_out, 65);
        OPENSSL_cleanse(secret_out, 32);
    }
    EC_POINT_clear_free(s);
    EC_POINT_free(a);
    EC_POINT_free(u);
    BN_clear_free(x);
    BN_clear_free(k);
    BN_CTX_free(ctx);
    return result;
}

/* The usual sender side: a fresh ephemeral key per message. */
static inline int pw_ssl_p256_ephemeral_ecdh(const unsigned char ua_public[65], unsigned char as_public_out[65],
                                             unsigned char secret_out[32]) {
    return pw_ssl_p256_ecdh(ua_public, NULL, as_public_out, secret_out);
}
#endif
