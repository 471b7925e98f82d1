#ifndef PW_CMICROHTTPD_SHIM_H
#define PW_CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <stdarg.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>
/* Typed wrappers for MHD's variadic MHD_start_daemon, prefixed pw_mhd_. */
#endif
