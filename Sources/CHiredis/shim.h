#ifndef PW_CHIREDIS_SHIM_H
#define PW_CHIREDIS_SHIM_H
#include <hiredis/hiredis.h>
#include <sys/time.h>
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

#endif
