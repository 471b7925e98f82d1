#ifndef PW_COPENSSL_SHIM_TLS_H
#define PW_COPENSSL_SHIM_TLS_H
/* TLS-server wrappers used by the sandbox (PushSandbox), prefixed pw_tls_.
   Only what Swift cannot call directly: function-like macros and variadic functions. */
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/err.h>

/* SSL_CTX_set_mode (macro over SSL_CTX_ctrl). */
static inline long pw_tls_ctx_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
/* SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) (macro). */
static inline int pw_tls_ctx_min_tls12(SSL_CTX *ctx) { return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION); }
/* SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION (the SSL_OP_BIT macros do not import). */
static inline void pw_tls_ctx_set_server_options(SSL_CTX *ctx) { (void)SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION); }
/* EVP_EC_gen("P-256") (macro over the variadic EVP_PKEY_Q_keygen). */
static inline EVP_PKEY *pw_tls_generate_p256(void) { return EVP_EC_gen("P-256"); }
/* BIO_get_mem_data (macro over BIO_ctrl): the bytes written to a memory BIO. */
static inline long pw_tls_bio_mem_data(BIO *bio, const char **data) {
    char *p = NULL; long n = BIO_get_mem_data(bio, &p); *data = p; return n;
}
/* Adds a v3 extension given in openssl.cnf syntax (e.g. "IP:127.0.0.1,DNS:localhost"), issuer = subject. */
static inline int pw_tls_add_extension(X509 *cert, int nid, const char *value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (ext == NULL) return 0;
    int ok = X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
    return ok;
}
#endif
