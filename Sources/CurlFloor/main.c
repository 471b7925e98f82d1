/*
 * pushworker-curl-floor: the cheapest a libcurl-based sender can be, as a reference beside
 * h2load in `pushworker-dev bench e2e` / `bench http` (docs/performance.md).
 *
 * Same command line as the h2load subset the bench uses (-n N -c C -m S -d BODYFILE
 * -H "name: value"... URL), plus --mode and --api. It POSTs the same request N times over
 * HTTP/2 (TLS, ALPN) through one curl multi handle with C connections x S streams, and does as
 * little as libcurl allows: C x S easy handles configured ONCE (no per-request setopt, no header
 * list rebuilt, no body copy), each re-added to the multi handle as soon as it finishes,
 * responses discarded, one thread. Everything this process spends per request is therefore
 * libcurl (+ nghttp2, OpenSSL, libc, kernel) — the floor the worker's HTTP I/O thread is
 * compared with. Like h2load it does not verify the server certificate (verification costs
 * only at the handshake, not per request).
 *
 * --mode plain   the textbook loop: curl_multi_perform / curl_multi_info_read / curl_multi_poll,
 *                a URL string, libcurl's default headers (its Accept, a form Content-Type),
 *                proxy settings from the environment. Kept for the record.
 * --mode tuned   (default) the cheapest libcurl setup (docs/performance.md), the
 *                reference line of the benches:
 *                - every connection corked (TCP_CORK, set in CURLOPT_SOCKOPTFUNCTION) and
 *                  uncorked + re-corked once per loop turn, right before the loop waits, so the
 *                  frames libcurl writes one SSL_write at a time leave in one TCP push per turn
 *                  and nothing ever waits in the kernel while the loop sleeps;
 *                - CURLOPT_CURLU: the URL parsed once, not per transfer;
 *                - only the headers the request needs: no default Accept header, no form
 *                  Content-Type (removed with "Accept:" / "Content-Type:" lines);
 *                - CURLOPT_PROXY "" and CURLOPT_NOPROXY "": no proxy environment look-up;
 *                - --api socket (default): curl_multi_socket_action driven by epoll (only the
 *                  connection with data runs), or --api perform: curl_multi_perform +
 *                  curl_multi_poll with the same knobs.
 *
 * Prints one line: "requests: N total, K succeeded, R req/s, cpu S s, U us/request (version)"
 * (CPU = getrusage(RUSAGE_SELF) over the sending phase). Exit 0 when every request got a 2xx.
 */
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static size_t discard(char *data, size_t size, size_t count, void *user) {
    (void)data; (void)user;
    return size * count;
}

static double monotonic_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static long long monotonic_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static double cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (double)usage.ru_utime.tv_sec + (double)usage.ru_utime.tv_usec / 1e6
         + (double)usage.ru_stime.tv_sec + (double)usage.ru_stime.tv_usec / 1e6;
}

static char *read_file(const char *path, long *length) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    char *bytes = NULL;
    if (fseek(file, 0, SEEK_END) == 0 && (*length = ftell(file)) >= 0 && fseek(file, 0, SEEK_SET) == 0) {
        bytes = malloc((size_t)*length + 1);
        if (bytes && fread(bytes, 1, (size_t)*length, file) != (size_t)*length) { free(bytes); bytes = NULL; }
    }
    fclose(file);
    return bytes;
}

/* ---- the tuned loop's state: epoll set, libcurl's timer, corked sockets ---- */

struct loop {
    CURLM *multi;
    int epfd;
    long timeout_ms;        /* libcurl's timer: -1 none */
    long long timer_set_ms; /* when it was set */
    int *corked;            /* connections opened (and corked) by libcurl, still open */
    int ncorked, capcorked;
    long long timer_calls;
};

static struct loop L = { NULL, -1, -1, 0, NULL, 0, 0, 0 };

static void set_cork(int fd, int on) { setsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, sizeof on); }

/* CURLOPT_SOCKOPTFUNCTION: every new TCP connection starts corked. */
static int sockopt_cork(void *clientp, curl_socket_t fd, curlsocktype purpose) {
    struct loop *l = clientp;
    if (purpose != CURLSOCKTYPE_IPCXN) return CURL_SOCKOPT_OK;
    set_cork(fd, 1);
    if (l->ncorked == l->capcorked) {
        int capacity = l->capcorked ? l->capcorked * 2 : 16;
        int *grown = realloc(l->corked, sizeof(int) * (size_t)capacity);
        if (!grown) { set_cork(fd, 0); return CURL_SOCKOPT_OK; } /* not tracked: never corked */
        l->corked = grown;
        l->capcorked = capacity;
    }
    l->corked[l->ncorked++] = fd;
    return CURL_SOCKOPT_OK;
}

/* CURLOPT_CLOSESOCKETFUNCTION: forget the socket before it is closed (its number may be reused). */
static int close_socket(void *clientp, curl_socket_t fd) {
    struct loop *l = clientp;
    for (int i = 0; i < l->ncorked; i++) {
        if (l->corked[i] == fd) { l->corked[i] = l->corked[--l->ncorked]; break; }
    }
    return close(fd);
}

/* Pushes out what this turn wrote; the sockets stay corked for the next turn. */
static void flush_corked(struct loop *l) {
    for (int i = 0; i < l->ncorked; i++) { set_cork(l->corked[i], 0); set_cork(l->corked[i], 1); }
}

/* CURLMOPT_SOCKETFUNCTION: mirror libcurl's interest in the epoll set. */
static int socket_callback(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp) {
    (void)easy;
    struct loop *l = userp;
    if (what == CURL_POLL_REMOVE) {
        if (socketp) epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
        curl_multi_assign(l->multi, fd, NULL);
        return 0;
    }
    struct epoll_event event;
    memset(&event, 0, sizeof event);
    event.events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
    event.data.fd = fd;
    if (socketp) {
        epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &event);
    } else {
        if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &event) != 0 && errno == EEXIST) epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &event);
        curl_multi_assign(l->multi, fd, (void *)1);
    }
    return 0;
}

/* CURLMOPT_TIMERFUNCTION */
static int timer_callback(CURLM *multi, long timeout_ms, void *userp) {
    (void)multi;
    struct loop *l = userp;
    l->timeout_ms = timeout_ms;
    l->timer_set_ms = monotonic_ms();
    l->timer_calls++;
    return 0;
}

/* ms until libcurl's timer expires (0: now), or `cap` when there is none or it is further. */
static int timer_wait_ms(struct loop *l, int cap) {
    if (l->timeout_ms < 0) return cap;
    long long left = l->timer_set_ms + l->timeout_ms - monotonic_ms();
    if (left <= 0) return 0;
    return left < cap ? (int)left : cap;
}

int main(int argc, char **argv) {
    long total = 0, connections = 1, streams = 1, body_length = 0;
    const char *body_path = NULL, *url = NULL, *mode = "tuned", *api = "socket";
    struct curl_slist *headers = NULL;
    int has_content_type = 0, has_accept = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) total = atol(argv[++i]);
        else if (!strcmp(argv[i], "-c") && i + 1 < argc) connections = atol(argv[++i]);
        else if (!strcmp(argv[i], "-m") && i + 1 < argc) streams = atol(argv[++i]);
        else if (!strcmp(argv[i], "-d") && i + 1 < argc) body_path = argv[++i];
        else if (!strcmp(argv[i], "--mode") && i + 1 < argc) mode = argv[++i];
        else if (!strcmp(argv[i], "--api") && i + 1 < argc) api = argv[++i];
        else if (!strcmp(argv[i], "-H") && i + 1 < argc) {
            const char *line = argv[++i];
            if (!strncasecmp(line, "content-type:", 13)) has_content_type = 1;
            if (!strncasecmp(line, "accept:", 7)) has_accept = 1;
            headers = curl_slist_append(headers, line);
        }
        else if (argv[i][0] != '-' && !url) url = argv[i];
        else { url = NULL; break; }
    }
    int tuned = !strcmp(mode, "tuned"), socket_api = !strcmp(api, "socket");
    if (!url || !body_path || total <= 0 || connections <= 0 || streams <= 0
        || (!tuned && strcmp(mode, "plain")) || (!socket_api && strcmp(api, "perform"))) {
        fprintf(stderr, "usage: pushworker-curl-floor [--mode tuned|plain] [--api socket|perform] -n N -c CONNECTIONS -m STREAMS -d BODYFILE [-H 'name: value']... URL\n");
        return 64;
    }
    if (!tuned) socket_api = 0;
    char *body = read_file(body_path, &body_length);
    if (!body) { perror(body_path); return 66; }
    if (tuned) {
        if (!has_accept) headers = curl_slist_append(headers, "Accept:");
        if (!has_content_type) headers = curl_slist_append(headers, "Content-Type:");
    } else {
        headers = curl_slist_append(headers, "Expect:");
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return 70;

    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, connections);
    curl_multi_setopt(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, streams);
    L.multi = multi;
    if (socket_api) {
        L.epfd = epoll_create1(EPOLL_CLOEXEC);
        if (L.epfd < 0) { perror("epoll_create1"); return 71; }
        curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, socket_callback);
        curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, &L);
        curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, timer_callback);
        curl_multi_setopt(multi, CURLMOPT_TIMERDATA, &L);
    }
    CURLU *parsed = NULL;
    if (tuned) {
        parsed = curl_url();
        if (!parsed || curl_url_set(parsed, CURLUPART_URL, url, 0) != CURLUE_OK) { fprintf(stderr, "bad URL %s\n", url); return 64; }
    }
    long started = 0, finished = 0, succeeded = 0;
    for (long slot = 0; slot < connections * streams && started < total; slot++, started++) {
        CURL *easy = curl_easy_init();
        if (!easy) return 70;
        if (tuned) {
            curl_easy_setopt(easy, CURLOPT_CURLU, parsed);
            curl_easy_setopt(easy, CURLOPT_PROXY, "");
            curl_easy_setopt(easy, CURLOPT_NOPROXY, "");
            curl_easy_setopt(easy, CURLOPT_SOCKOPTFUNCTION, sockopt_cork);
            curl_easy_setopt(easy, CURLOPT_SOCKOPTDATA, &L);
            curl_easy_setopt(easy, CURLOPT_CLOSESOCKETFUNCTION, close_socket);
            curl_easy_setopt(easy, CURLOPT_CLOSESOCKETDATA, &L);
        } else {
            curl_easy_setopt(easy, CURLOPT_URL, url);
        }
        curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
        curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
        curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, body_length);
        curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
        curl_multi_add_handle(multi, easy);
    }

    double wall_start = monotonic_seconds(), cpu_start = cpu_seconds();
    int running = 0;
    struct epoll_event events[64];
    while (finished < total) {
        if (socket_api) {
            if (L.timeout_ms >= 0 && timer_wait_ms(&L, 1000) == 0) {
                long long calls = L.timer_calls;
                curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
                /* libcurl calls the timer callback only when its timeout changes: read it back. */
                if (L.timer_calls == calls) {
                    long left = -1;
                    if (curl_multi_timeout(multi, &left) != CURLM_OK) left = -1;
                    L.timeout_ms = left;
                    L.timer_set_ms = monotonic_ms();
                }
            }
        } else if (curl_multi_perform(multi, &running) != CURLM_OK) {
            break;
        }
        int readded = 0;
        CURLMsg *message;
        int left;
        while ((message = curl_multi_info_read(multi, &left))) {
            if (message->msg != CURLMSG_DONE) continue;
            CURL *easy = message->easy_handle;
            CURLcode code = message->data.result;
            long status = 0;
            curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
            curl_multi_remove_handle(multi, easy);
            finished++;
            if (code == CURLE_OK && status >= 200 && status < 300) succeeded++;
            else if (finished - succeeded <= 3) fprintf(stderr, "request failed: %s, status %ld\n", curl_easy_strerror(code), status);
            if (started < total && curl_multi_add_handle(multi, easy) == CURLM_OK) { started++; readded++; }
            else curl_easy_cleanup(easy);
        }
        if (started == finished) break; /* nothing in flight: a handle could not be re-added */
        if (finished >= total) break;
        if (socket_api && readded) continue; /* start them now: libcurl set a 0 ms timer */
        if (tuned) flush_corked(&L);
        if (!socket_api) {
            curl_multi_poll(multi, NULL, 0, 1000, NULL);
            continue;
        }
        int count = epoll_wait(L.epfd, events, 64, timer_wait_ms(&L, 1000));
        for (int i = 0; i < count; i++) {
            int flags = (events[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) | (events[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0)
                      | (events[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
            curl_multi_socket_action(multi, events[i].data.fd, flags, &running);
        }
    }
    double wall = monotonic_seconds() - wall_start, cpu = cpu_seconds() - cpu_start;
    printf("requests: %ld total, %ld succeeded, %.0f req/s, cpu %.3f s, %.2f us/request (%s; %s%s)\n",
           total, succeeded, wall > 0 ? (double)finished / wall : 0.0, cpu,
           finished > 0 ? cpu / (double)finished * 1e6 : 0.0, curl_version(), mode,
           tuned ? (socket_api ? ", socket API" : ", perform API") : "");
    curl_multi_cleanup(multi);
    if (parsed) curl_url_cleanup(parsed);
    curl_slist_free_all(headers);
    free(body);
    curl_global_cleanup();
    return succeeded == total ? 0 : 1;
}
