#ifndef PW_CPUSHREDISTLS_H
#define PW_CPUSHREDISTLS_H
/* TLS under hiredis 0.14 (which has none), prefixed pw_rtls_: OpenSSL on the socket hiredis
 * connected, feeding the context's own output buffer and reply reader, so command formatting and
 * reply parsing stay hiredis's. Every OpenSSL call of PushRedis is in this target.
 *
 * Verification is always on: the server's certificate chain must lead to a CA of the configured
 * file (or the system store) and name the host connected to (DNS name or IP address; for an IP
 * address, a certificate without subjectAltName may name it as its subject CN); TLS 1.2 is the
 * oldest version offered. There is no switch to turn either check off. */
#include <stddef.h>
#include <hiredis/hiredis.h>

/* One client's TLS settings (an SSL_CTX): shared by all of its connections, read-only once made. */
typedef struct pw_rtls_config pw_rtls_config;
/* One connection's TLS session (an SSL), bound to a redisContext's socket. */
typedef struct pw_rtls_session pw_rtls_session;

/* Builds the settings. ca_file: PEM CA certificates that verify servers (NULL: the system store,
 * OpenSSL's default paths). cert_file / key_file: the client certificate (chain, PEM) and its
 * private key (PEM), both or neither. NULL on failure with a message in error (which file, why). */
pw_rtls_config *pw_rtls_config_new(const char *ca_file, const char *cert_file, const char *key_file,
                                   char *error, size_t error_size);
void pw_rtls_config_free(pw_rtls_config *config);

/* Why a handshake failed (pw_rtls_failure.kind). */
enum {
    PW_RTLS_OK = 0,
    /* The chain leads to no trusted CA (verify code in .verify_code, OpenSSL's text in .detail). */
    PW_RTLS_UNTRUSTED = 1,
    /* The certificate does not name the host; .names lists the names it has. */
    PW_RTLS_NAME_MISMATCH = 2,
    /* The certificate has expired or is not valid yet. */
    PW_RTLS_EXPIRED = 3,
    /* Another verification failure (.verify_code, .detail). */
    PW_RTLS_VERIFY_OTHER = 4,
    /* The TLS protocol failed (an alert, no common version; .detail). */
    PW_RTLS_PROTOCOL = 5,
    /* The socket failed or timed out during the handshake (.detail). */
    PW_RTLS_IO = 6,
    /* Out of memory or a bad argument. */
    PW_RTLS_INTERNAL = 7,
};

typedef struct pw_rtls_failure {
    int kind;
    long verify_code;
    char detail[256];
    /* The certificate's DNS names and IP addresses (subjectAltName, else the subject CN), ", "-separated. */
    char names[256];
} pw_rtls_failure;

/* Runs the client handshake on c's connected socket: SNI set to host when it is a DNS name, the
 * certificate checked against host (a DNS name or an IP address literal). Blocking, bounded by the
 * socket timeouts hiredis set (SO_RCVTIMEO / SO_SNDTIMEO). On success returns the session and
 * leaves the socket non-blocking: from then on only pw_rtls_write / pw_rtls_read move c's bytes
 * (never redisGetReply or redisBufferRead/Write, which would bypass TLS). On failure returns NULL
 * and fills failure. */
pw_rtls_session *pw_rtls_handshake(redisContext *c, pw_rtls_config *config, const char *host, pw_rtls_failure *failure);

/* Frees the session (no close_notify: the connection is closed by redisFree right after). */
void pw_rtls_session_free(pw_rtls_session *session);

/* Writes as much of c's pending output (redisAppend*) as TLS takes now, without blocking.
 * 0: progress or would block; -1: socket error (errno); -4: TLS error (pw_rtls_error). */
int pw_rtls_write(redisContext *c, pw_rtls_session *session);

/* Reads every record that has arrived, without blocking, into c's reply reader.
 * > 0: plaintext bytes read; 0: nothing yet; -1: socket error (errno); -2: the server closed the
 * connection; -3: protocol error (unparsable reply); -4: TLS error (pw_rtls_error). */
long pw_rtls_read(redisContext *c, pw_rtls_session *session);

/* Whether the session waits to write before it can go on (poll for POLLOUT too). */
int pw_rtls_wants_write(const pw_rtls_session *session);

/* The last TLS error of the session, as OpenSSL words it ("" when none). */
const char *pw_rtls_error(const pw_rtls_session *session);

/* The negotiated protocol ("TLSv1.3"), for logs and tests. */
const char *pw_rtls_version(const pw_rtls_session *session);
#endif
