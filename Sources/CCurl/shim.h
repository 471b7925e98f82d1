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
#endif
