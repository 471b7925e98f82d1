/* RFC 8291 §3.1 sender-side ECDH on P-256 (see CPushCrypto.h). Only non-deprecated
 * OpenSSL 3.0 EC_GROUP / EC_POINT / BN calls are used. */
#include "CPushCrypto.h"

#include <stddef.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/obj_mac.h>

static EC_GROUP *p256_group_value = NULL;
static CRYPTO_ONCE p256_group_once = CRYPTO_ONCE_STATIC_INIT;

static void p256_group_init(void) {
    p256_group_value = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
}

/* The P-256 group, built once (thread-safe) and kept for the process lifetime; NULL if it
 * could not be built. EC_POINT_* operations only read a group, so threads share it. */
static const EC_GROUP *p256_group(void) {
    if (CRYPTO_THREAD_run_once(&p256_group_once, p256_group_init) != 1) return NULL;
    return p256_group_value;
}

int pw_crypto_p256_ecdh(const unsigned char ua_public[65], const unsigned char *scalar,
                        unsigned char as_public_out[65], unsigned char secret_out[32]) {
    const EC_GROUP *group = p256_group();
    if (group == NULL) return PW_CRYPTO_ECDH_FAILED;
    const BIGNUM *order = EC_GROUP_get0_order(group);
    int result = PW_CRYPTO_ECDH_FAILED;
    BN_CTX *ctx = BN_CTX_secure_new();
    BIGNUM *k = BN_secure_new();
    BIGNUM *x = BN_secure_new();
    EC_POINT *u = EC_POINT_new(group), *a = EC_POINT_new(group), *s = EC_POINT_new(group);
    if (ctx == NULL || k == NULL || x == NULL || u == NULL || a == NULL || s == NULL) goto done;
    /* The peer first: a bad subscription key costs no scalar multiplication. oct2point
     * refuses a point not on the curve; the tag check refuses the 65-byte hybrid forms. */
    if (ua_public[0] != POINT_CONVERSION_UNCOMPRESSED || EC_POINT_oct2point(group, u, ua_public, 65, ctx) != 1
        || EC_POINT_is_at_infinity(group, u)) {
        result = PW_CRYPTO_ECDH_BAD_PEER;
        goto done;
    }
    BN_set_flags(k, BN_FLG_CONSTTIME);
    if (scalar != NULL) {
        if (BN_bin2bn(scalar, 32, k) == NULL) goto done;
        if (BN_is_zero(k) || BN_cmp(k, order) >= 0) {
            result = PW_CRYPTO_ECDH_BAD_SCALAR;
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
    result = PW_CRYPTO_ECDH_OK;
done:
    if (result != PW_CRYPTO_ECDH_OK) {
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
