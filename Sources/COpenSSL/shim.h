#ifndef PW_COPENSSL_SHIM_H
#define PW_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/rand.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/crypto.h>
#include <openssl/pkcs12.h>
#include <openssl/provider.h>
/* Typed wrappers, prefixed pw_ssl_, for what Swift cannot call: function-like macros and
 * composite constants. Used by PushCrypto (libcrypto) and PushSandbox (its TLS server).
 * C logic over libcrypto lives in the CPushCrypto target, not here. */

/* EVP_EC_gen (macro over the variadic EVP_PKEY_Q_keygen), e.g. "P-256". */
static inline EVP_PKEY *pw_ssl_ec_gen(const char *curve) { return EVP_EC_gen(curve); }
/* Key-selection constants (composite macros), for EVP_PKEY_fromdata. */
static inline int pw_ssl_selection_keypair(void) { return EVP_PKEY_KEYPAIR; }
static inline int pw_ssl_selection_public_key(void) { return EVP_PKEY_PUBLIC_KEY; }
/* AEAD tag control codes, for EVP_CIPHER_CTX_ctrl. */
static inline int pw_ssl_ctrl_gcm_get_tag(void) { return EVP_CTRL_GCM_GET_TAG; }
static inline int pw_ssl_ctrl_gcm_set_tag(void) { return EVP_CTRL_GCM_SET_TAG; }
/* BIO_get_mem_data (macro over BIO_ctrl): the bytes written to a memory BIO. */
static inline long pw_ssl_bio_mem_data(BIO *bio, const char **data) {
    char *p = NULL;
    long n = BIO_get_mem_data(bio, &p);
    *data = p;
    return n;
}
/* SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) (macro over SSL_CTX_ctrl). */
static inline int pw_ssl_ctx_set_min_proto_tls12(SSL_CTX *ctx) { return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION); }
/* SSL_CTX_set_mode (macro over SSL_CTX_ctrl). */
static inline long pw_ssl_ctx_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
/* SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION (the SSL_OP_BIT macros do not import). */
static inline void pw_ssl_ctx_set_server_options(SSL_CTX *ctx) { (void)SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION); }
/* XN_FLAG_RFC2253 (a composite of XN_FLAG_* macros), for X509_NAME_print_ex. */
static inline unsigned long pw_ssl_xn_flag_rfc2253(void) { return XN_FLAG_RFC2253; }
#endif
