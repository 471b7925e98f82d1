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
#endif
