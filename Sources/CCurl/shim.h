#ifndef PW_CCURL_SHIM_H
#define PW_CCURL_SHIM_H
#include <curl/curl.h>
/* Typed wrappers for curl's variadic functions, function-like macros and composite constants,
 * prefixed pw_curl_, one per argument type (a curl_slist goes through pw_curl_easy_setopt_ptr). */
static inline CURLcode pw_curl_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode pw_curl_easy_setopt_ptr(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode pw_curl_easy_setopt_str(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode pw_curl_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode pw_curl_easy_setopt_write_cb(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) { return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, cb); }
static inline CURLcode pw_curl_easy_setopt_header_cb(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) { return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, cb); }
static inline CURLMcode pw_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
static inline CURLcode pw_curl_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode pw_curl_easy_getinfo_double(CURL *h, CURLINFO i, double *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode pw_curl_easy_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode pw_curl_easy_getinfo_ptr(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }
static inline curl_version_info_data *pw_curl_version_info(void) { return curl_version_info(CURLVERSION_NOW); }
static inline CURLcode pw_curl_easy_setopt_opensocket_cb(CURL *h, curl_socket_t (*cb)(void *, curlsocktype, struct curl_sockaddr *)) { return curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, cb); }
static inline CURLcode pw_curl_easy_setopt_prereq_cb(CURL *h, int (*cb)(void *, char *, char *, int, int)) { return curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, cb); }
static inline CURLcode pw_curl_easy_setopt_blob(CURL *h, CURLoption o, struct curl_blob *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode pw_curl_easy_getinfo_str(CURL *h, CURLINFO i, const char **v) { return curl_easy_getinfo(h, i, v); }
static inline long pw_curl_version_http2_feature(void) { return CURL_VERSION_HTTP2; }
static inline long pw_curl_version_ssl_feature(void) { return CURL_VERSION_SSL; }
static inline long pw_curl_global_default(void) { return CURL_GLOBAL_DEFAULT; }

/* ---- PushHTTP's event loop (Curl/CurlIOLoop.swift): libcurl's socket API on epoll ----------
 * One per multi handle, used on the client's I/O thread only, except pw_curl_events_wakeup
 * (any thread). libcurl tells us which sockets to watch (CURLMOPT_SOCKETFUNCTION) and when its
 * next timeout is (CURLMOPT_TIMERFUNCTION); the loop runs curl_multi_socket_action for the
 * sockets epoll reports and for the timer. Write coalescing: every TCP connection libcurl opens
 * is corked (TCP_CORK, from CURLOPT_SOCKOPTFUNCTION) and uncorked + re-corked in
 * pw_curl_events_wait right before the loop sleeps, so the frames libcurl writes one SSL_write
 * at a time during a loop turn leave in one TCP push, and nothing ever waits in the kernel while
 * the loop sleeps (the cork is lifted before every wait). docs/http-client.md. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* The storage of a prepared request (its header nodes, lines, URL and body; PushHTTP's
 * CurlPreparedRequest and HTTPHeaderBlock): malloc's 16-byte alignment covers curl_slist.
 * Swift's UnsafeMutableRawPointer.allocate sends every allocation that names an alignment to
 * posix_memalign, off jemalloc's fast path. Aborts when memory runs out, as Swift's own
 * allocation does. */
static inline void *pw_curl_storage_alloc(size_t size) {
    void *storage = malloc(size > 0 ? size : 1);
    if (storage == NULL) abort();
    return storage;
}

static inline void pw_curl_storage_free(void *storage) { free(storage); }

typedef struct pw_curl_events {
    CURLM *multi;
    int epfd;
    int wakefd;
    int cork;               /* 1: cork new connections */
    long timeout_ms;        /* libcurl's timer: -1 none */
    long long timer_set_ms; /* CLOCK_MONOTONIC ms when it was set */
    int *corked;            /* open connections opened corked (removed on close) */
    int ncorked, capcorked;
    long long flushes;      /* uncork + re-cork rounds (tests) */
    long long timer_calls;  /* CURLMOPT_TIMERFUNCTION calls */
} pw_curl_events;

static inline long long pw_curl_events_now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static inline int pw_curl_events_socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp) {
    (void)easy;
    pw_curl_events *e = (pw_curl_events *)userp;
    if (what == CURL_POLL_REMOVE) {
        if (socketp) epoll_ctl(e->epfd, EPOLL_CTL_DEL, fd, NULL);
        curl_multi_assign(e->multi, fd, NULL);
        return 0;
    }
    struct epoll_event event;
    memset(&event, 0, sizeof event);
    event.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0);
    event.data.fd = fd;
    if (socketp) {
        epoll_ctl(e->epfd, EPOLL_CTL_MOD, fd, &event);
    } else {
        if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, fd, &event) != 0 && errno == EEXIST) epoll_ctl(e->epfd, EPOLL_CTL_MOD, fd, &event);
        curl_multi_assign(e->multi, fd, (void *)1);
    }
    return 0;
}

static inline int pw_curl_events_timer_cb(CURLM *multi, long timeout_ms, void *userp) {
    (void)multi;
    pw_curl_events *e = (pw_curl_events *)userp;
    e->timeout_ms = timeout_ms;
    e->timer_set_ms = pw_curl_events_now_ms();
    e->timer_calls++;
    return 0;
}

static inline void pw_curl_events_set_cork(int fd, int on) { setsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, sizeof on); }

/* CURLOPT_SOCKOPTFUNCTION: a new TCP connection starts corked (and is remembered). */
static inline int pw_curl_events_sockopt_cb(void *clientp, curl_socket_t fd, curlsocktype purpose) {
    pw_curl_events *e = (pw_curl_events *)clientp;
    if (purpose != CURLSOCKTYPE_IPCXN || !e->cork) return CURL_SOCKOPT_OK;
    if (e->ncorked == e->capcorked) {
        int capacity = e->capcorked ? e->capcorked * 2 : 16;
        int *grown = (int *)realloc(e->corked, sizeof(int) * (size_t)capacity);
        if (!grown) return CURL_SOCKOPT_OK; /* not remembered: left uncorked */
        e->corked = grown;
        e->capcorked = capacity;
    }
    pw_curl_events_set_cork(fd, 1);
    e->corked[e->ncorked++] = fd;
    return CURL_SOCKOPT_OK;
}

/* CURLOPT_CLOSESOCKETFUNCTION: forgotten before it is closed (its number may be reused). */
static inline int pw_curl_events_close_cb(void *clientp, curl_socket_t fd) {
    pw_curl_events *e = (pw_curl_events *)clientp;
    for (int i = 0; i < e->ncorked; i++) {
        if (e->corked[i] == fd) { e->corked[i] = e->corked[--e->ncorked]; break; }
    }
    return close(fd);
}

/* NULL when epoll or eventfd cannot be created, or libcurl refuses the callbacks. */
static inline pw_curl_events *pw_curl_events_create(CURLM *multi, int cork) {
    pw_curl_events *e = (pw_curl_events *)calloc(1, sizeof *e);
    if (!e) return NULL;
    e->multi = multi;
    e->cork = cork;
    e->timeout_ms = -1;
    e->epfd = epoll_create1(EPOLL_CLOEXEC);
    e->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event event;
    memset(&event, 0, sizeof event);
    event.events = EPOLLIN;
    event.data.fd = e->wakefd;
    if (e->epfd < 0 || e->wakefd < 0 || epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->wakefd, &event) != 0
        || curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, pw_curl_events_socket_cb) != CURLM_OK
        || curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, e) != CURLM_OK
        || curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, pw_curl_events_timer_cb) != CURLM_OK
        || curl_multi_setopt(multi, CURLMOPT_TIMERDATA, e) != CURLM_OK) {
        if (e->epfd >= 0) close(e->epfd);
        if (e->wakefd >= 0) close(e->wakefd);
        free(e);
        return NULL;
    }
    return e;
}

/* After curl_multi_cleanup (which may still call the callbacks). */
static inline void pw_curl_events_destroy(pw_curl_events *e) {
    close(e->epfd);
    close(e->wakefd);
    free(e->corked);
    free(e);
}

/* Any thread: makes the next (or current) pw_curl_events_wait return. */
static inline void pw_curl_events_wakeup(pw_curl_events *e) {
    uint64_t one = 1;
    ssize_t written = write(e->wakefd, &one, sizeof one);
    (void)written; /* EAGAIN: the counter is already non-zero, a wake-up is pending */
}

/* The easy-handle side: new connections corked, closed ones forgotten. */
static inline CURLcode pw_curl_events_attach(CURL *easy, pw_curl_events *e) {
    CURLcode code = curl_easy_setopt(easy, CURLOPT_SOCKOPTFUNCTION, pw_curl_events_sockopt_cb);
    if (code == CURLE_OK) code = curl_easy_setopt(easy, CURLOPT_SOCKOPTDATA, e);
    if (code == CURLE_OK) code = curl_easy_setopt(easy, CURLOPT_CLOSESOCKETFUNCTION, pw_curl_events_close_cb);
    if (code == CURLE_OK) code = curl_easy_setopt(easy, CURLOPT_CLOSESOCKETDATA, e);
    return code;
}

/* ms until libcurl's timer expires (0: due), or `cap` when there is none or it is further. */
static inline int pw_curl_events_timer_wait_ms(const pw_curl_events *e, int cap) {
    if (e->timeout_ms < 0) return cap;
    long long left = e->timer_set_ms + e->timeout_ms - pw_curl_events_now_ms();
    if (left <= 0) return 0;
    return left < cap ? (int)left : cap;
}

/* Runs libcurl's timer if it is due (the 0 ms one curl_multi_add_handle sets included).
 * libcurl calls the timer callback only when its earliest timeout *changes*: if the call left
 * it where it was (we were early by a rounding of a millisecond, or the expired timer was set
 * again for the same instant), no callback comes, so the timer is read back with
 * curl_multi_timeout instead of being taken as gone (which would stall a lone transfer until
 * the wait's cap). */
static inline void pw_curl_events_run_timer(pw_curl_events *e) {
    if (e->timeout_ms < 0 || pw_curl_events_timer_wait_ms(e, 1) > 0) return;
    long long calls = e->timer_calls;
    int running = 0;
    curl_multi_socket_action(e->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    if (e->timer_calls == calls) {
        long left = -1;
        if (curl_multi_timeout(e->multi, &left) != CURLM_OK) left = -1;
        e->timeout_ms = left;
        e->timer_set_ms = pw_curl_events_now_ms();
    }
}

/* Pushes out what this turn wrote (uncork, re-cork), waits up to `max_ms` (less if libcurl's
 * timer is due earlier) for socket activity or a wake-up, and runs curl_multi_socket_action for
 * each ready socket. Returns the number of events (0 on timeout or EINTR). */
static inline int pw_curl_events_wait(pw_curl_events *e, int max_ms) {
    if (e->ncorked > 0) {
        for (int i = 0; i < e->ncorked; i++) { pw_curl_events_set_cork(e->corked[i], 0); pw_curl_events_set_cork(e->corked[i], 1); }
        e->flushes++;
    }
    struct epoll_event events[64];
    int count = epoll_wait(e->epfd, events, 64, pw_curl_events_timer_wait_ms(e, max_ms < 0 ? 0 : max_ms));
    if (count < 0) return 0;
    for (int i = 0; i < count; i++) {
        int fd = events[i].data.fd;
        if (fd == e->wakefd) {
            uint64_t value;
            ssize_t got = read(e->wakefd, &value, sizeof value);
            (void)got;
            continue;
        }
        uint32_t ready = events[i].events;
        int flags = ((ready & EPOLLIN) ? CURL_CSELECT_IN : 0) | ((ready & EPOLLOUT) ? CURL_CSELECT_OUT : 0)
                  | ((ready & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0);
        int running = 0;
        curl_multi_socket_action(e->multi, fd, flags, &running);
    }
    return count;
}

static inline long pw_curl_events_corked_count(const pw_curl_events *e) { return e->ncorked; }
static inline long long pw_curl_events_flush_count(const pw_curl_events *e) { return e->flushes; }
#endif
