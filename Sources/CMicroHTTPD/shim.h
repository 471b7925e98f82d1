#ifndef PW_CMICROHTTPD_SHIM_H
#define PW_CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>
/* Typed wrappers, prefixed pw_mhd_, for libmicrohttpd's variadic info calls. Starting a
 * daemon with our options and address formatting are C logic: the CPushHTTPD target. */

/* MHD_get_daemon_info(MHD_DAEMON_INFO_BIND_PORT): the port the daemon listens on (for port 0); 0 if unknown. */
static inline uint16_t pw_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}
/* MHD_SIZE_UNKNOWN (a cast macro): the size of a response whose body is produced by a content reader. */
static inline uint64_t pw_mhd_size_unknown(void) { return MHD_SIZE_UNKNOWN; }
#endif
