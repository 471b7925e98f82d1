#ifndef PW_CMICROHTTPD_SHIM_H
#define PW_CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <stdarg.h>
#include <string.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <microhttpd.h>

/* MHD_start_daemon is variadic: a typed wrapper binding an IPv4 address, with an internal
 * polling thread (epoll), a connection limit and a per-connection timeout. `extra_flags` is
 * OR-ed into the daemon flags (e.g. MHD_ALLOW_SUSPEND_RESUME for streamed responses). */
static inline struct MHD_Daemon *pw_mhd_start_flags(const char *ipv4, uint16_t port, unsigned int threads,
                                                    unsigned int extra_flags,
                                                    MHD_AccessHandlerCallback handler, void *context) {
    struct sockaddr_in address;
    memset(&address, 0, sizeof(address));
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    if (inet_pton(AF_INET, ipv4, &address.sin_addr) != 1) return NULL;
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG | extra_flags;
    if (threads > 1) {
        return MHD_start_daemon(flags, port, NULL, NULL, handler, context,
                                MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&address,
                                MHD_OPTION_THREAD_POOL_SIZE, threads,
                                MHD_OPTION_CONNECTION_LIMIT, 10000U,
                                MHD_OPTION_CONNECTION_TIMEOUT, 30U,
                                MHD_OPTION_END);
    }
    return MHD_start_daemon(flags, port, NULL, NULL, handler, context,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&address,
                            MHD_OPTION_CONNECTION_LIMIT, 10000U,
                            MHD_OPTION_CONNECTION_TIMEOUT, 30U,
                            MHD_OPTION_END);
}

static inline struct MHD_Daemon *pw_mhd_start(const char *ipv4, uint16_t port, unsigned int threads,
                                              MHD_AccessHandlerCallback handler, void *context) {
    return pw_mhd_start_flags(ipv4, port, threads, 0, handler, context);
}

/* The flag that allows MHD_suspend_connection/MHD_resume_connection (an enum value Swift
 * imports as a different type than the daemon flags argument). */
static inline unsigned int pw_mhd_allow_suspend_resume_flag(void) { return (unsigned int)MHD_ALLOW_SUSPEND_RESUME; }

/* MHD_SIZE_UNKNOWN is a cast macro Swift does not import. */
static inline uint64_t pw_mhd_size_unknown(void) { return MHD_SIZE_UNKNOWN; }

/* The port the daemon actually listens on (for port 0). */
static inline uint16_t pw_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

/* The client's IPv4/IPv6 address as text, for rate limiting. */
static inline int pw_mhd_client_address(struct MHD_Connection *connection, char *buffer, size_t size) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!info || !info->client_addr) return -1;
    const struct sockaddr *sa = info->client_addr;
    if (sa->sa_family == AF_INET) {
        return inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buffer, (socklen_t)size) ? 0 : -1;
    }
    if (sa->sa_family == AF_INET6) {
        return inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buffer, (socklen_t)size) ? 0 : -1;
    }
    return -1;
}
#endif
