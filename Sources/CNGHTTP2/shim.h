#ifndef PW_CNGHTTP2_SHIM_H
#define PW_CNGHTTP2_SHIM_H
#include <nghttp2/nghttp2.h>
/* The sandbox's event loop also needs epoll and eventfd, which Swift's Glibc module does not export. */
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <fcntl.h>
/* Typed wrappers, prefixed pw_ng_. */

/* accept(2) and make the new socket non-blocking and close-on-exec (fcntl is variadic). */
static inline int pw_ng_accept_nonblocking(int listen_fd) {
    int fd = accept(listen_fd, NULL, NULL);
    if (fd < 0) return fd;
    int flags = fcntl(fd, F_GETFL, 0);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
}
#endif
