/* The libmicrohttpd glue of PushHTTPServer (see CPushHTTPD.h). */
#include "CPushHTTPD.h"

#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

/* Limits every daemon gets (HTTPListener documents them). */
static const unsigned int connection_limit = 10000U;
static const unsigned int connection_timeout_seconds = 30U;

static struct MHD_Daemon *start(const char *ipv4, uint16_t port, unsigned int threads, unsigned int extra_flags,
                                 MHD_AccessHandlerCallback handler, void *context) {
    if (ipv4 == NULL || handler == NULL) return NULL;
    struct sockaddr_in address;
    memset(&address, 0, sizeof(address));
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    if (inet_pton(AF_INET, ipv4, &address.sin_addr) != 1) return NULL;
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG | extra_flags;
    /* MHD_OPTION_THREAD_POOL_SIZE 1 is the same as no pool: one list serves both. */
    struct MHD_OptionItem options[] = {
        {MHD_OPTION_SOCK_ADDR, 0, &address},
        {MHD_OPTION_CONNECTION_LIMIT, (intptr_t)connection_limit, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)connection_timeout_seconds, NULL},
        {MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)threads, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    if (threads <= 1) options[3].option = MHD_OPTION_END;
    return MHD_start_daemon(flags, port, NULL, NULL, handler, context, MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

struct MHD_Daemon *pw_httpd_start(const char *ipv4, uint16_t port, unsigned int threads,
                                  MHD_AccessHandlerCallback handler, void *context) {
    return start(ipv4, port, threads, 0, handler, context);
}

struct MHD_Daemon *pw_httpd_start_suspendable(const char *ipv4, uint16_t port, unsigned int threads,
                                              MHD_AccessHandlerCallback handler, void *context) {
    return start(ipv4, port, threads, (unsigned int)MHD_ALLOW_SUSPEND_RESUME, handler, context);
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
