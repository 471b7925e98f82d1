#include "CPushRedisTLS.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/sds.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

struct pw_rtls_config {
        SSL_CTX *ctx;
};

struct pw_rtls_session {
        SSL *ssl;
        int wants_write;
        char error[256];
        /* The IP address connected to, when the host is one ("" otherwise). */
        char ip[INET6_ADDRSTRLEN + 1];
};

/* OpenSSL's reason for the most recent error on this thread's queue, or fallback. */
static void pw_rtls_reason(char *out, size_t size, const char *fallback) {
        unsigned long code = ERR_peek_last_error();
        const char *reason = code ? ERR_reason_error_string(code) : NULL;
        snprintf(out, size, "%s", reason ? reason : fallback);
}

pw_rtls_config *pw_rtls_config_new(const char *ca_file, const char *cert_file, const char *key_file,
                                   char *error, size_t error_size) {
        ERR_clear_error();
        if ((cert_file == NULL) != (key_file == NULL)) {
                snprintf(error, error_size, "a client certificate needs both its certificate file and its key file");
                return NULL;
        }
        SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
        if (ctx == NULL) {
                snprintf(error, error_size, "cannot create a TLS context");
                return NULL;
        }
        /* TLS 1.2 is the oldest version offered: SSL_CTX_set_min_proto_version(3). */
        SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
        SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
        /* pw_rtls_write hands hiredis's output buffer to SSL_write, which may move between a
         * retried call and the next (SSL_CTX_set_mode(3): ACCEPT_MOVING_WRITE_BUFFER), and takes
         * what the socket accepts now (ENABLE_PARTIAL_WRITE). */
        SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
        /* The server's chain must verify; a failure aborts the handshake (SSL_CTX_set_verify(3)). */
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        char reason[160];
        if (ca_file != NULL) {
                if (SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1) {
                        pw_rtls_reason(reason, sizeof reason, "unreadable");
                        snprintf(error, error_size, "cannot load the CA certificates of %s: %s", ca_file, reason);
                        SSL_CTX_free(ctx);
                        return NULL;
                }
        } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
                pw_rtls_reason(reason, sizeof reason, "unreadable");
                snprintf(error, error_size, "cannot load the system's CA certificates: %s", reason);
                SSL_CTX_free(ctx);
                return NULL;
        }
        if (cert_file != NULL) {
                if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
                        pw_rtls_reason(reason, sizeof reason, "unreadable");
                        snprintf(error, error_size, "cannot load the client certificate %s: %s", cert_file, reason);
                        SSL_CTX_free(ctx);
                        return NULL;
                }
                if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1) {
                        if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
                                snprintf(error, error_size, "the client key %s does not belong to the certificate %s", key_file, cert_file);
                                SSL_CTX_free(ctx);
                                return NULL;
                        }
                        pw_rtls_reason(reason, sizeof reason, "unreadable");
                        snprintf(error, error_size, "cannot load the client key %s: %s", key_file, reason);
                        SSL_CTX_free(ctx);
                        return NULL;
                }
                if (SSL_CTX_check_private_key(ctx) != 1) {
                        snprintf(error, error_size, "the client key %s does not belong to the certificate %s", key_file, cert_file);
                        SSL_CTX_free(ctx);
                        return NULL;
                }
        }
        pw_rtls_config *config = calloc(1, sizeof *config);
        if (config == NULL) {
                snprintf(error, error_size, "out of memory");
                SSL_CTX_free(ctx);
                return NULL;
        }
        config->ctx = ctx;
        return config;
}

void pw_rtls_config_free(pw_rtls_config *config) {
        if (config == NULL) return;
        SSL_CTX_free(config->ctx);
        free(config);
}

/* Appends text to out (", "-separated), truncating quietly. */
static void pw_rtls_append_name(char *out, size_t size, const char *text) {
        size_t used = strlen(out);
        if (used + 1 >= size) return;
        snprintf(out + used, size - used, "%s%s", used ? ", " : "", text);
}

/* The DNS names and IP addresses a certificate is for (subjectAltName, else the subject CN). */
static void pw_rtls_certificate_names(X509 *cert, char *out, size_t size) {
        out[0] = 0;
        GENERAL_NAMES *names = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
        if (names != NULL) {
                for (int i = 0; i < sk_GENERAL_NAME_num(names); i++) {
                        const GENERAL_NAME *name = sk_GENERAL_NAME_value(names, i);
                        char text[INET6_ADDRSTRLEN + 1];
                        if (name->type == GEN_DNS) {
                                const unsigned char *data = ASN1_STRING_get0_data(name->d.dNSName);
                                int length = ASN1_STRING_length(name->d.dNSName);
                                char dns[254];
                                if (length <= 0 || (size_t)length >= sizeof dns) continue;
                                memcpy(dns, data, (size_t)length);
                                dns[length] = 0;
                                pw_rtls_append_name(out, size, dns);
                        } else if (name->type == GEN_IPADD) {
                                const unsigned char *data = ASN1_STRING_get0_data(name->d.iPAddress);
                                int length = ASN1_STRING_length(name->d.iPAddress);
                                int family = length == 4 ? AF_INET : length == 16 ? AF_INET6 : 0;
                                if (family && inet_ntop(family, data, text, sizeof text)) pw_rtls_append_name(out, size, text);
                        }
                }
                GENERAL_NAMES_free(names);
        }
        if (out[0] == 0) {
                char common[256];
                if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, common, sizeof common) > 0) {
                        pw_rtls_append_name(out, size, common);
                }
        }
}

/* Whether text and ip are the same IP address (both parsed, so "::1" equals "0:0::1"). */
static int pw_rtls_same_ip(const char *text, const char *ip) {
        unsigned char a[16], b[16];
        if (inet_pton(AF_INET, text, a) == 1 && inet_pton(AF_INET, ip, b) == 1) return memcmp(a, b, 4) == 0;
        if (inet_pton(AF_INET6, text, a) == 1 && inet_pton(AF_INET6, ip, b) == 1) return memcmp(a, b, 16) == 0;
        return 0;
}

/* The verify callback (SSL_set_verify(3)): OpenSSL's verdict, with one addition for servers reached
 * by IP address. X509_check_ip(3) reads only the subjectAltName's IP entries; a certificate with no
 * subjectAltName at all whose subject CN is exactly that address (as some managed services issue)
 * passes, the way X509_check_host(3) falls back to the CN for a DNS name. The chain must still
 * verify; a certificate with a subjectAltName is judged by it alone. */
static int pw_rtls_verify(int ok, X509_STORE_CTX *store) {
        if (ok) return 1;
        if (X509_STORE_CTX_get_error(store) != X509_V_ERR_IP_ADDRESS_MISMATCH || X509_STORE_CTX_get_error_depth(store) != 0) return 0;
        SSL *ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx());
        pw_rtls_session *session = ssl ? SSL_get_app_data(ssl) : NULL;
        X509 *cert = X509_STORE_CTX_get_current_cert(store);
        if (session == NULL || session->ip[0] == 0 || cert == NULL) return 0;
        if (X509_get_ext_by_NID(cert, NID_subject_alt_name, -1) >= 0) return 0;
        char common[256];
        if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, common, sizeof common) <= 0) return 0;
        if (!pw_rtls_same_ip(common, session->ip)) return 0;
        X509_STORE_CTX_set_error(store, X509_V_OK);
        return 1;
}

/* Fills failure after SSL_connect returned result. */
static void pw_rtls_describe_failure(SSL *ssl, int result, pw_rtls_failure *failure) {
        int saved_errno = errno;
        long verify = SSL_get_verify_result(ssl);
        if (verify != X509_V_OK) {
                failure->verify_code = verify;
                snprintf(failure->detail, sizeof failure->detail, "%s", X509_verify_cert_error_string(verify));
                switch (verify) {
                case X509_V_ERR_HOSTNAME_MISMATCH:
                case X509_V_ERR_IP_ADDRESS_MISMATCH:
                        failure->kind = PW_RTLS_NAME_MISMATCH;
                        break;
                case X509_V_ERR_CERT_HAS_EXPIRED:
                case X509_V_ERR_CERT_NOT_YET_VALID:
                        failure->kind = PW_RTLS_EXPIRED;
                        break;
                case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
                case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
                case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
                case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
                case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
                case X509_V_ERR_CERT_SIGNATURE_FAILURE:
                case X509_V_ERR_CERT_UNTRUSTED:
                        failure->kind = PW_RTLS_UNTRUSTED;
                        break;
                default:
                        failure->kind = PW_RTLS_VERIFY_OTHER;
                        break;
                }
                /* The peer's chain is kept on a failed verification (the leaf first, on a client);
                 * SSL_get0_peer_certificate is set only once verification passed. */
                STACK_OF(X509) *chain = SSL_get_peer_cert_chain(ssl);
                if (chain != NULL && sk_X509_num(chain) > 0) {
                        pw_rtls_certificate_names(sk_X509_value(chain, 0), failure->names, sizeof failure->names);
                }
                return;
        }
        int error = SSL_get_error(ssl, result);
        if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
                failure->kind = PW_RTLS_IO;
                snprintf(failure->detail, sizeof failure->detail, "no answer within the timeout");
        } else if (error == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
                failure->kind = PW_RTLS_IO;
                if (saved_errno == 0 || result == 0) {
                        snprintf(failure->detail, sizeof failure->detail, "the server closed the connection");
                } else {
                        snprintf(failure->detail, sizeof failure->detail, "%s", strerror(saved_errno));
                }
        } else {
                failure->kind = PW_RTLS_PROTOCOL;
                pw_rtls_reason(failure->detail, sizeof failure->detail, "handshake failed");
        }
}

pw_rtls_session *pw_rtls_handshake(redisContext *c, pw_rtls_config *config, const char *host, pw_rtls_failure *failure) {
        memset(failure, 0, sizeof *failure);
        failure->kind = PW_RTLS_INTERNAL;
        if (c == NULL || config == NULL || host == NULL || c->fd < 0) return NULL;
        pw_rtls_session *session = calloc(1, sizeof *session);
        if (session == NULL) return NULL;
        ERR_clear_error();
        SSL *ssl = SSL_new(config->ctx);
        if (ssl == NULL) {
                free(session);
                return NULL;
        }
        session->ssl = ssl;
        X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
        X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        unsigned char address[16];
        int is_ip = inet_pton(AF_INET, host, address) == 1 || inet_pton(AF_INET6, host, address) == 1;
        int named;
        if (is_ip) {
                /* An IP address is checked against the certificate's IP entries
                 * (X509_VERIFY_PARAM_set1_ip_asc(3)) and never sent as SNI (RFC 6066 §3 allows
                 * only host names there). */
                named = X509_VERIFY_PARAM_set1_ip_asc(param, host);
                snprintf(session->ip, sizeof session->ip, "%s", host);
        } else {
                /* SNI (SSL_set_tlsext_host_name(3)), so a server with several certificates presents
                 * this host's, and the host name check of the chain (SSL_set1_host(3): the
                 * certificate's DNS names, wildcards only as a whole left-most label). */
                named = SSL_set_tlsext_host_name(ssl, host) == 1 && SSL_set1_host(ssl, host) == 1;
        }
        SSL_set_app_data(ssl, session);
        SSL_set_verify(ssl, SSL_VERIFY_PEER, pw_rtls_verify);
        if (named != 1 || SSL_set_fd(ssl, c->fd) != 1) {
                pw_rtls_session_free(session);
                return NULL;
        }
        errno = 0;
        int result = SSL_connect(ssl);
        if (result != 1) {
                pw_rtls_describe_failure(ssl, result, failure);
                pw_rtls_session_free(session);
                return NULL;
        }
        int flags = fcntl(c->fd, F_GETFL);
        if (flags < 0 || fcntl(c->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
                failure->kind = PW_RTLS_IO;
                snprintf(failure->detail, sizeof failure->detail, "%s", strerror(errno));
                pw_rtls_session_free(session);
                return NULL;
        }
        failure->kind = PW_RTLS_OK;
        return session;
}

void pw_rtls_session_free(pw_rtls_session *session) {
        if (session == NULL) return;
        SSL_free(session->ssl);
        free(session);
}

/* Records OpenSSL's error (or errno's) for pw_rtls_error; returns the code for the caller. */
static long pw_rtls_fail(pw_rtls_session *session, int ssl_error, int saved_errno) {
        if (ssl_error == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
                snprintf(session->error, sizeof session->error, "%s", saved_errno ? strerror(saved_errno) : "connection lost");
                errno = saved_errno;
                return -1;
        }
        pw_rtls_reason(session->error, sizeof session->error, "TLS error");
        return -4;
}

int pw_rtls_write(redisContext *c, pw_rtls_session *session) {
        session->wants_write = 0;
        while (c->obuf != NULL && sdslen(c->obuf) > 0) {
                size_t pending = sdslen(c->obuf);
                int chunk = pending > INT_MAX ? INT_MAX : (int)pending;
                ERR_clear_error();
                errno = 0;
                int written = SSL_write(session->ssl, c->obuf, chunk);
                if (written > 0) {
                        sdsrange(c->obuf, written, -1);
                        continue;
                }
                int saved_errno = errno;
                int error = SSL_get_error(session->ssl, written);
                if (error == SSL_ERROR_WANT_WRITE) {
                        session->wants_write = 1;
                        return 0;
                }
                if (error == SSL_ERROR_WANT_READ) return 0;
                if (error == SSL_ERROR_SYSCALL && ERR_peek_error() == 0
                    && (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK || saved_errno == EINTR)) {
                        return 0;
                }
                long failed = pw_rtls_fail(session, error, saved_errno);
                /* A server that refuses the client (TLS 1.3 checks the client certificate after the
                 * handshake) sends an alert and closes: the alert says why, the reset write does not. */
                char alert[256];
                ERR_clear_error();
                char byte;
                int got = SSL_read(session->ssl, &byte, 1);
                if (got <= 0 && SSL_get_error(session->ssl, got) == SSL_ERROR_SSL) {
                        pw_rtls_reason(alert, sizeof alert, "");
                        if (alert[0] && strstr(alert, "alert") != NULL) {
                                snprintf(session->error, sizeof session->error, "%s", alert);
                                return -4;
                        }
                }
                errno = saved_errno;
                return (int)failed;
        }
        return 0;
}

long pw_rtls_read(redisContext *c, pw_rtls_session *session) {
        char buffer[16384];
        long total = 0;
        session->wants_write = 0;
        for (;;) {
                ERR_clear_error();
                errno = 0;
                int got = SSL_read(session->ssl, buffer, sizeof buffer);
                if (got > 0) {
                        if (redisReaderFeed(c->reader, buffer, (size_t)got) != REDIS_OK) return -3;
                        total += got;
                        continue;
                }
                int saved_errno = errno;
                int error = SSL_get_error(session->ssl, got);
                switch (error) {
                case SSL_ERROR_WANT_READ:
                        return total;
                case SSL_ERROR_WANT_WRITE:
                        session->wants_write = 1;
                        return total;
                case SSL_ERROR_ZERO_RETURN:
                        return total > 0 ? total : -2;
                case SSL_ERROR_SYSCALL:
                        if (ERR_peek_error() == 0) {
                                if (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK || saved_errno == EINTR) return total;
                                if (saved_errno == 0) return total > 0 ? total : -2;
                        }
                        return total > 0 ? total : pw_rtls_fail(session, error, saved_errno);
                default:
                        /* OpenSSL 3 reports a close without close_notify as an error. */
                        if (ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) return total > 0 ? total : -2;
                        return total > 0 ? total : pw_rtls_fail(session, error, saved_errno);
                }
        }
}

int pw_rtls_wants_write(const pw_rtls_session *session) { return session->wants_write; }

const char *pw_rtls_error(const pw_rtls_session *session) { return session->error; }

const char *pw_rtls_version(const pw_rtls_session *session) { return SSL_get_version(session->ssl); }
