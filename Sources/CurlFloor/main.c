/*
 * pushworker-curl-floor: the cheapest a libcurl-based sender can be, as a reference beside
 * h2load in `pushworker bench e2e` / `bench http` (docs/performance.md).
 *
 * Same command line as the h2load subset the bench uses (-n N -c C -m S -d BODYFILE
 * -H "name: value"... URL). It POSTs the same request N times over HTTP/2 (TLS, ALPN) through
 * one curl multi handle with C connections x S streams, and does as little as libcurl allows:
 * C x S easy handles configured ONCE (no per-request setopt, no header list rebuilt, no body
 * copy), each re-added to the multi handle as soon as it finishes, responses discarded, one
 * thread, curl_multi_perform / curl_multi_info_read / curl_multi_poll. Everything this process
 * spends per request is therefore libcurl (+ nghttp2, OpenSSL, libc, kernel) — the floor the
 * worker's HTTP I/O thread is compared with. Like h2load it does not verify the server
 * certificate (verification costs only at the handshake, not per request).
 *
 * Prints one line: "requests: N total, K succeeded, R req/s, cpu S s, U us/request (version)"
 * (CPU = getrusage(RUSAGE_SELF) over the sending phase). Exit 0 when every request got a 2xx.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static size_t discard(char *data, size_t size, size_t count, void *user) {
    (void)data; (void)user;
    return size * count;
}

static double monotonic_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
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

int main(int argc, char **argv) {
    long total = 0, connections = 1, streams = 1, body_length = 0;
    const char *body_path = NULL, *url = NULL;
    struct curl_slist *headers = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) total = atol(argv[++i]);
        else if (!strcmp(argv[i], "-c") && i + 1 < argc) connections = atol(argv[++i]);
        else if (!strcmp(argv[i], "-m") && i + 1 < argc) streams = atol(argv[++i]);
        else if (!strcmp(argv[i], "-d") && i + 1 < argc) body_path = argv[++i];
        else if (!strcmp(argv[i], "-H") && i + 1 < argc) headers = curl_slist_append(headers, argv[++i]);
        else if (argv[i][0] != '-' && !url) url = argv[i];
        else { url = NULL; break; }
    }
    if (!url || !body_path || total <= 0 || connections <= 0 || streams <= 0) {
        fprintf(stderr, "usage: pushworker-curl-floor -n N -c CONNECTIONS -m STREAMS -d BODYFILE [-H 'name: value']... URL\n");
        return 64;
    }
    char *body = read_file(body_path, &body_length);
    if (!body) { perror(body_path); return 66; }
    headers = curl_slist_append(headers, "Expect:");
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return 70;

    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, connections);
    curl_multi_setopt(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, streams);
    long started = 0, finished = 0, succeeded = 0;
    for (long slot = 0; slot < connections * streams && started < total; slot++, started++) {
        CURL *easy = curl_easy_init();
        if (!easy) return 70;
        curl_easy_setopt(easy, CURLOPT_URL, url);
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
    while (finished < total) {
        if (curl_multi_perform(multi, &running) != CURLM_OK) break;
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
            if (started < total && curl_multi_add_handle(multi, easy) == CURLM_OK) started++;
            else curl_easy_cleanup(easy);
        }
        if (started == finished) break; /* nothing in flight: a handle could not be re-added */
        if (finished < total) curl_multi_poll(multi, NULL, 0, 1000, NULL);
    }
    double wall = monotonic_seconds() - wall_start, cpu = cpu_seconds() - cpu_start;
    printf("requests: %ld total, %ld succeeded, %.0f req/s, cpu %.3f s, %.2f us/request (%s)\n",
           total, succeeded, wall > 0 ? (double)finished / wall : 0.0, cpu,
           finished > 0 ? cpu / (double)finished * 1e6 : 0.0, curl_version());
    curl_multi_cleanup(multi);
    curl_slist_free_all(headers);
    free(body);
    curl_global_cleanup();
    return succeeded == total ? 0 : 1;
}
