#include "CPushCurl.h"
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

/* CURLMOPT_SOCKETFUNCTION: mirrors libcurl's interest in a socket in the epoll set. */
static int pw_curl_events_socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp) {
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

/* CURLMOPT_TIMERFUNCTION: libcurl's earliest timeout changed. */
static int pw_curl_events_timer_cb(CURLM *multi, long timeout_ms, void *userp) {
    (void)multi;
    pw_curl_events *e = (pw_curl_events *)userp;
    e->timeout_ms = timeout_ms;
    e->timer_set_ms = pw_curl_events_now_ms();
    e->timer_calls++;
    return 0;
}

static void pw_curl_events_set_cork(int fd, int on) { setsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, sizeof on); }

/* CURLOPT_SOCKOPTFUNCTION: a new TCP connection starts corked (and is remembered). */
static int pw_curl_events_sockopt_cb(void *clientp, curl_socket_t fd, curlsocktype purpose) {
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
static int pw_curl_events_close_cb(void *clientp, curl_socket_t fd) {
    pw_curl_events *e = (pw_curl_events *)clientp;
    for (int i = 0; i < e->ncorked; i++) {
        if (e->corked[i] == fd) { e->corked[i] = e->corked[--e->ncorked]; break; }
    }
    return close(fd);
}

pw_curl_events *pw_curl_events_create(CURLM *multi, int cork) {
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

void pw_curl_events_destroy(pw_curl_events *e) {
    close(e->epfd);
    close(e->wakefd);
    free(e->corked);
    free(e);
}

void pw_curl_events_wakeup(pw_curl_events *e) {
    uint64_t one = 1;
    ssize_t written = write(e->wakefd, &one, sizeof one);
    (void)written; /* EAGAIN: the counter is already non-zero, a wake-up is pending */
}

CURLcode pw_curl_events_attach(CURL *easy, pw_curl_events *e) {
    CURLcode code = curl_easy_setopt(easy, CURLOPT_SOCKOPTFUNCTION, pw_curl_events_sockopt_cb);
    if (code == CURLE_OK) code = curl_easy_setopt(easy, CURLOPT_SOCKOPTDATA, e);
    if (code == CURLE_OK) code = curl_easy_setopt(easy, CURLOPT_CLOSESOCKETFUNCTION, pw_curl_events_close_cb);
    if (code == CURLE_OK) code = curl_easy_setopt(easy, CURLOPT_CLOSESOCKETDATA, e);
    return code;
}

int pw_curl_events_timer_wait_ms(const pw_curl_events *e, int cap) {
    if (e->timeout_ms < 0) return cap;
    long long left = e->timer_set_ms + e->timeout_ms - pw_curl_events_now_ms();
    if (left <= 0) return 0;
    return left < cap ? (int)left : cap;
}

void pw_curl_events_run_timer(pw_curl_events *e) {
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

int pw_curl_events_wait(pw_curl_events *e, int max_ms) {
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
