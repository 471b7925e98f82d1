#ifndef PW_CHIREDIS_SHIM_H
#define PW_CHIREDIS_SHIM_H
#include <hiredis/hiredis.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <errno.h>
/* Typed wrappers, prefixed pw_redis_. Use redisCommandArgv / redisAppendCommandArgv, never the variadic forms. */

static inline struct timeval pw_redis_timeval_ms(long ms) {
    struct timeval tv;
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    return tv;
}

/* Blocking TCP connect with a connect timeout; the same timeout is then set for reads and writes. Never NULL unless out of memory. */
static inline redisContext *pw_redis_connect_tcp(const char *host, int port, long timeout_ms) {
    redisContext *c = redisConnectWithTimeout(host, port, pw_redis_timeval_ms(timeout_ms));
    if (c != NULL && c->err == 0) redisSetTimeout(c, pw_redis_timeval_ms(timeout_ms));
    return c;
}

/* Blocking unix-socket connect, as pw_redis_connect_tcp. */
static inline redisContext *pw_redis_connect_unix(const char *path, long timeout_ms) {
    redisContext *c = redisConnectUnixWithTimeout(path, pw_redis_timeval_ms(timeout_ms));
    if (c != NULL && c->err == 0) redisSetTimeout(c, pw_redis_timeval_ms(timeout_ms));
    return c;
}

/* redisGetReply with a typed out-parameter. */
static inline int pw_redis_get_reply(redisContext *c, redisReply **reply) {
    return redisGetReply(c, (void **)reply);
}

static inline int pw_redis_error_code(const redisContext *c) { return c->err; }
static inline const char *pw_redis_error_string(const redisContext *c) { return c->errstr; }

/* Non-blocking I/O on a blocking context, for talking to several servers at once (poll(2)):
   the socket stays blocking for redisGetReply; these calls use MSG_DONTWAIT per call. */

static inline int pw_redis_fd(const redisContext *c) { return c->fd; }

/* Bytes of formatted commands (redisAppendCommandArgv) not yet written to the socket. */
static inline size_t pw_redis_pending_output(const redisContext *c) { return c->obuf ? sdslen(c->obuf) : 0; }

/* Writes as much pending output as the socket takes now, without blocking (MSG_NOSIGNAL: no SIGPIPE).
   0: progress or would block; -1: socket error (errno). */
static inline int pw_redis_write_nonblocking(redisContext *c) {
    size_t len = pw_redis_pending_output(c);
    if (len == 0) return 0;
    ssize_t n = send(c->fd, c->obuf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
    sdsrange(c->obuf, (int)n, -1);
    return 0;
}

/* Reads what has arrived, without blocking, into the context's reply parser.
   > 0: bytes read; 0: nothing yet; -1: socket error (errno); -2: the server closed the connection; -3: protocol error. */
static inline long pw_redis_read_nonblocking(redisContext *c) {
    char buf[16384];
    ssize_t n = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0) return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
    if (n == 0) return -2;
    if (redisReaderFeed(c->reader, buf, (size_t)n) != REDIS_OK) return -3;
    return (long)n;
}

/* The next reply already parsed from what was read: REDIS_OK with *reply == NULL when none is complete yet. */
static inline int pw_redis_parsed_reply(redisContext *c, redisReply **reply) {
    return redisReaderGetReply(c->reader, (void **)reply);
}

#endif
