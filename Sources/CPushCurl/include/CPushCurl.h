#ifndef PW_CPUSHCURL_H
#define PW_CPUSHCURL_H
/* The C side of PushHTTP's libcurl use, prefixed pw_curl_: the storage of a prepared request
 * and the event loop of the HTTP/2 I/O thread (Curl/CurlIOLoop.swift). The callbacks libcurl
 * calls live in curl_events.c; what runs per request or per loop turn and is small stays
 * inline here. docs/http-client.md. */
#include <curl/curl.h>
#include <stdlib.h>
#include <time.h>

/* ---- request storage ----------------------------------------------------------------------
 * The storage of a prepared request (its header nodes, lines, URL and body; PushHTTP's
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

/* ---- the event loop: libcurl's socket API on epoll ------------------------------------------
 * One per multi handle, used on the client's I/O thread only, except pw_curl_events_wakeup
 * (any thread). libcurl tells us which sockets to watch (CURLMOPT_SOCKETFUNCTION) and when its
 * next timeout is (CURLMOPT_TIMERFUNCTION); the loop runs curl_multi_socket_action for the
 * sockets epoll reports and for the timer. Write coalescing: every TCP connection libcurl opens
 * is corked (TCP_CORK, from CURLOPT_SOCKOPTFUNCTION) and uncorked + re-corked in
 * pw_curl_events_wait right before the loop sleeps, so the frames libcurl writes one SSL_write
 * at a time during a loop turn leave in one TCP push, and nothing ever waits in the kernel while
 * the loop sleeps (the cork is lifted before every wait). */
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

/* CLOCK_MONOTONIC in milliseconds: the clock of libcurl's timer and of the loop's deadlines. */
static inline long long pw_curl_events_now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* NULL when epoll or eventfd cannot be created, or libcurl refuses the callbacks. `cork`
 * non-zero: new connections are corked (and flushed by pw_curl_events_wait). */
pw_curl_events *pw_curl_events_create(CURLM *multi, int cork);

/* After curl_multi_cleanup (which may still call the callbacks). */
void pw_curl_events_destroy(pw_curl_events *e);

/* Any thread: makes the next (or current) pw_curl_events_wait return. */
void pw_curl_events_wakeup(pw_curl_events *e);

/* The easy-handle side: new connections corked, closed ones forgotten. */
CURLcode pw_curl_events_attach(CURL *easy, pw_curl_events *e);

/* ms until libcurl's timer expires (0: due), or `cap` when there is none or it is further. */
int pw_curl_events_timer_wait_ms(const pw_curl_events *e, int cap);

/* Runs libcurl's timer if it is due (the 0 ms one curl_multi_add_handle sets included).
 * libcurl calls the timer callback only when its earliest timeout *changes*: if the call left
 * it where it was (we were early by a rounding of a millisecond, or the expired timer was set
 * again for the same instant), no callback comes, so the timer is read back with
 * curl_multi_timeout instead of being taken as gone (which would stall a lone transfer until
 * the wait's cap). */
void pw_curl_events_run_timer(pw_curl_events *e);

/* Pushes out what this turn wrote (uncork, re-cork), waits up to `max_ms` (less if libcurl's
 * timer is due earlier) for socket activity or a wake-up, and runs curl_multi_socket_action for
 * each ready socket. Returns the number of events (0 on timeout or EINTR). */
int pw_curl_events_wait(pw_curl_events *e, int max_ms);

/* Open connections that were opened corked. */
static inline long pw_curl_events_corked_count(const pw_curl_events *e) { return e->ncorked; }
/* Uncork + re-cork rounds so far. */
static inline long long pw_curl_events_flush_count(const pw_curl_events *e) { return e->flushes; }
#endif
