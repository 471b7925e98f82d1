#ifndef PW_CPUSHHTTPD_H
#define PW_CPUSHHTTPD_H
/* The libmicrohttpd glue of PushHTTPServer, prefixed pw_httpd_: starting a daemon with our
 * options (MHD_start_daemon is variadic), formatting a client's address and joining repeated
 * header lines. */
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>

/* The limits a daemon enforces on every connection (HTTPListener.Limits documents them). */
struct pw_httpd_limits {
    /* Connections at once, all clients (MHD_OPTION_CONNECTION_LIMIT); 0: 10000. */
    unsigned int connection_limit;
    /* Connections at once from one client address (MHD_OPTION_PER_IP_CONNECTION_LIMIT); 0: no cap. */
    unsigned int per_address_connection_limit;
    /* Seconds a connection may stay idle, between requests or in the middle of one, before it is
     * closed (MHD_OPTION_CONNECTION_TIMEOUT); 0: 30. */
    unsigned int idle_timeout_seconds;
    /* Bytes of memory per connection (MHD_OPTION_CONNECTION_MEMORY_LIMIT): the request line and
     * headers must fit (MHD answers a larger request with 431 or 414 and closes); 0: MHD's 32 KiB. */
    size_t connection_memory_bytes;
    /* Called with the daemon's context when a request ends, answered or not (the connection
     * closed mid-request, the daemon stopped): MHD_OPTION_NOTIFY_COMPLETED, where a handler
     * frees what it keeps per request in *con_cls. NULL: none. */
    MHD_RequestCompletedCallback request_completed;
    /* Non-zero: the URL's path reaches the handler as the client sent it, percent-escapes
     * included (MHD_OPTION_UNESCAPE_CALLBACK that changes nothing), so a handler can split it
     * into segments before decoding them and an escaped '/' stays inside its segment; query
     * arguments are then left escaped too. 0: MHD decodes both (MHD_http_unescape). */
    int raw_paths;
};

/* Starts a daemon with `limits` (NULL: every default) and, when `suspendable` is non-zero,
 * MHD_ALLOW_SUSPEND_RESUME (see pw_httpd_start_suspendable); otherwise as pw_httpd_start. */
struct MHD_Daemon *pw_httpd_start_limited(const char *ipv4, uint16_t port, unsigned int threads,
                                          const struct pw_httpd_limits *limits, int suspendable,
                                          MHD_AccessHandlerCallback handler, void *context);

/* Starts a daemon bound to the IPv4 address `ipv4` (dotted quad, e.g. "127.0.0.1" or
 * "0.0.0.0") and `port` (0: the kernel picks one; read it with pw_mhd_bound_port), with an
 * internal polling thread (epoll), or a pool of `threads` polling threads when threads > 1,
 * at most 10000 connections and a 30 s per-connection idle timeout. `handler` is called with
 * `context` on the polling thread(s). NULL if `ipv4` is not an IPv4 address or MHD cannot
 * start (port in use, no permission, out of memory); stop a daemon with MHD_stop_daemon. */
struct MHD_Daemon *pw_httpd_start(const char *ipv4, uint16_t port, unsigned int threads,
                                  MHD_AccessHandlerCallback handler, void *context);

/* pw_httpd_start with MHD_ALLOW_SUSPEND_RESUME (and so MHD_USE_ITC): the daemon's handlers may
 * suspend a connection from a content reader and resume it from any thread (streamed responses:
 * Server-Sent Events). Every suspended connection must be resumed before MHD_stop_daemon. */
struct MHD_Daemon *pw_httpd_start_suspendable(const char *ipv4, uint16_t port, unsigned int threads,
                                              MHD_AccessHandlerCallback handler, void *context);

/* Writes the numeric address of an IPv4 or IPv6 socket address (inet_ntop: "192.0.2.1",
 * "2001:db8::1", "::ffff:192.0.2.1") into `buffer` (NUL-terminated; 46 bytes hold any).
 * 0 on success; -1 for NULL, another family, or a buffer too small (buffer then empty). */
int pw_httpd_format_address(const struct sockaddr *address, char *buffer, size_t size);

/* The client's address of `connection` as text (pw_httpd_format_address), for rate limiting
 * and logs. 0 on success, -1 if MHD has no address for it. */
int pw_httpd_client_address(struct MHD_Connection *connection, char *buffer, size_t size);

/* Joins the values of every request header line named `name` (case-insensitively), in the order
 * received, with ", " (RFC 9110 §5.3: repeated lines are one comma-separated list) into `buffer`
 * (NUL-terminated, truncated to size - 1; NULL with size 0 only measures). Returns the length of
 * the whole joined text (as snprintf: call again with length + 1 bytes if it did not fit), or -1
 * when the request has no such header (or `connection`/`name` is NULL). */
long pw_httpd_header_values(struct MHD_Connection *connection, const char *name, char *buffer, size_t size);

#endif
