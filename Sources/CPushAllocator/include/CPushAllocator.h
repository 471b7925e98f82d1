#ifndef PW_CPUSHALLOCATOR_H
#define PW_CPUSHALLOCATOR_H
#include <stddef.h>

/* The process's allocator: jemalloc (Debian's libjemalloc2), linked into the pushworker
 * executable, which replaces glibc's malloc for everything in the process (Swift's runtime,
 * libcurl, librdkafka, hiredis, OpenSSL). Why: the worker allocates on one thread and frees on
 * another (requests built by the consumer and freed by the HTTP I/O thread, outcomes built there
 * and freed by the finisher), which glibc's per-thread arenas serve slowly (docs/performance.md
 * "The allocator"). Defaults in allocator.c (`malloc_conf`); the MALLOC_CONF environment
 * variable still overrides them. */

/* Returns the unused dirty pages of every arena to the kernel now (jemalloc's
 * "arena.<all>.purge"). 0 on success, an errno value otherwise. */
int pw_allocator_purge(void);

/* jemalloc's version ("5.3.0-0-g54eaed1…", a static string of the library), or NULL when the
 * process's malloc does not answer jemalloc's "version" query. */
const char *pw_allocator_version(void);

/* Bytes the allocator holds in physically resident pages ("stats.resident"), after refreshing
 * its statistics; 0 if unavailable. */
size_t pw_allocator_resident_bytes(void);

/* Reads a signed size option or statistic of jemalloc by name (e.g. "opt.dirty_decay_ms").
 * 0 on success, an errno value otherwise. */
int pw_allocator_read_ssize(const char *name, long *value);

/* Bytes this thread has allocated and freed since it started ("thread.allocated",
 * "thread.deallocated"): their difference's change over a stretch of code is what that code
 * left live (`pushworker-dev bench decode`). 0 on success, an errno value otherwise (both set to 0). */
int pw_allocator_thread_counters(unsigned long long *allocated, unsigned long long *deallocated);

#endif
