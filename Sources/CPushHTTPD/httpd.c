/* The libmicrohttpd glue of PushHTTPServer (see CPushHTTPD.h). */
#include "CPushHTTPD.h"

#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <netinet/in.h>

/* Defaults for limits left at 0 (HTTPListener documents them). */
static const unsigned int default_connection_limit = 10000U;
static const unsigned int default_idle_timeout_seconds = 30U;

/* MHD_OPTION_UNESCAPE_CALLBACK of a daemon with raw_paths: the text stays as received. */
static size_t keep_escaped(void *cls, struct MHD_Connection *connection, char *text) {
    (void)cls;
    (void)connection;
    return strlen(text);
}

static struct MHD_Daemon *start(const char *ipv4, uint16_t port, unsigned int threads, unsigned int extra_flags,
                                 const struct pw_httpd_limits *limits, MHD_AccessHandlerCallback handler, void *context) {
    if (ipv4 == NULL || handler == NULL) return NULL;
    struct sockaddr_in address;
    memset(&address, 0, sizeof(address));
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    if (inet_pton(AF_INET, ipv4, &address.sin_addr) != 1) return NULL;
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG | extra_flags;
    unsigned int connection_limit = limits && limits->connection_limit ? limits->connection_limit : default_connection_limit;
    unsigned int timeout = limits && limits->idle_timeout_seconds ? limits->idle_timeout_seconds : default_idle_timeout_seconds;
    struct MHD_OptionItem options[10];
    size_t count = 0;
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &address};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, (intptr_t)connection_limit, NULL};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)timeout, NULL};
    if (limits && limits->per_address_connection_limit)
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                                   (intptr_t)limits->per_address_connection_limit, NULL};
    if (limits && limits->connection_memory_bytes)
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                                                   (intptr_t)limits->connection_memory_bytes, NULL};
    if (limits && limits->request_completed)
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)limits->request_completed, context};
    if (limits && limits->raw_paths)
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)keep_escaped, NULL};
    /* MHD_OPTION_THREAD_POOL_SIZE 1 is the same as no pool. */
    if (threads > 1) options[count++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)threads, NULL};
    options[count] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    return MHD_start_daemon(flags, port, NULL, NULL, handler, context, MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

struct MHD_Daemon *pw_httpd_start(const char *ipv4, uint16_t port, unsigned int threads,
                                  MHD_AccessHandlerCallback handler, void *context) {
    return start(ipv4, port, threads, 0, NULL, handler, context);
}

struct MHD_Daemon *pw_httpd_start_suspendable(const char *ipv4, uint16_t port, unsigned int threads,
                                              MHD_AccessHandlerCallback handler, void *context) {
    return start(ipv4, port, threads, (unsigned int)MHD_ALLOW_SUSPEND_RESUME, NULL, handler, context);
}

struct MHD_Daemon *pw_httpd_start_limited(const char *ipv4, uint16_t port, unsigned int threads,
                                          const struct pw_httpd_limits *limits, int suspendable,
                                          MHD_AccessHandlerCallback handler, void *context) {
    return start(ipv4, port, threads, suspendable ? (unsigned int)MHD_ALLOW_SUSPEND_RESUME : 0U, limits, handler, context);
}

int pw_httpd_format_address(const struct sockaddr *address, char *buffer, size_t size) {
    if (buffer == NULL || size == 0) return -1;
    buffer[0] = '\0';
    if (address == NULL) return -1;
    const char *text = NULL;
    if (address->sa_family == AF_INET) {
        text = inet_ntop(AF_INET, &((const struct sockaddr_in *)address)->sin_addr, buffer, (socklen_t)size);
    } else if (address->sa_family == AF_INET6) {
        text = inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)address)->sin6_addr, buffer, (socklen_t)size);
    }
    if (text == NULL) {
        buffer[0] = '\0';
        return -1;
    }
    return 0;
}

int pw_httpd_client_address(struct MHD_Connection *connection, char *buffer, size_t size) {
    if (buffer != NULL && size > 0) buffer[0] = '\0';
    if (connection == NULL) return -1;
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) return -1;
    return pw_httpd_format_address(info->client_addr, buffer, size);
}

struct header_join {
    const char *name;
    char *buffer;
    size_t size;
    size_t length;
    int found;
};

static void join_append(struct header_join *join, const char *part) {
    size_t length = strlen(part);
    if (join->buffer != NULL && join->length + 1 < join->size) {
        size_t room = join->size - 1 - join->length;
        size_t copied = length < room ? length : room;
        memcpy(join->buffer + join->length, part, copied);
        join->buffer[join->length + copied] = '\0';
    }
    join->length += length;
}

static enum MHD_Result join_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    (void)kind;
    struct header_join *join = cls;
    if (key == NULL || strcasecmp(key, join->name) != 0) return MHD_YES;
    if (join->found) join_append(join, ", ");
    join->found = 1;
    join_append(join, value ? value : "");
    return MHD_YES;
}

long pw_httpd_header_values(struct MHD_Connection *connection, const char *name, char *buffer, size_t size) {
    if (buffer != NULL && size > 0) buffer[0] = '\0';
    if (connection == NULL || name == NULL) return -1;
    struct header_join join = {name, size > 0 ? buffer : NULL, size, 0, 0};
    (void)MHD_get_connection_values(connection, MHD_HEADER_KIND, join_header, &join);
    return join.found ? (long)join.length : -1;
}
