#include "CPushAllocator.h"
#include <jemalloc/jemalloc.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* jemalloc reads this at its first allocation (before main): unused dirty pages go back to the
 * kernel after ~2 s instead of the default 10 s, and without the intermediate "muzzy" state, so
 * RSS follows the in-flight work (a 10 MB job's buffers are returned soon after it is freed).
 * The periodic pw_allocator_purge of an idle worker returns the rest. MALLOC_CONF overrides. */
const char *malloc_conf = "dirty_decay_ms:2000,muzzy_decay_ms:0";

int pw_allocator_purge(void) {
    char name[48];
    snprintf(name, sizeof name, "arena.%u.purge", (unsigned)MALLCTL_ARENAS_ALL);
    return mallctl(name, NULL, NULL, NULL, 0);
}

const char *pw_allocator_version(void) {
    const char *version = NULL;
    size_t size = sizeof version;
    if (mallctl("version", (void *)&version, &size, NULL, 0) != 0) return NULL;
    return version;
}

size_t pw_allocator_resident_bytes(void) {
    uint64_t epoch = 1;
    size_t size = sizeof epoch;
    mallctl("epoch", &epoch, &size, &epoch, size);
    size_t resident = 0;
    size = sizeof resident;
    if (mallctl("stats.resident", &resident, &size, NULL, 0) != 0) return 0;
    return resident;
}

int pw_allocator_read_ssize(const char *name, long *value) {
    ssize_t read = 0;
    size_t size = sizeof read;
    int error = mallctl(name, &read, &size, NULL, 0);
    if (error == 0) *value = (long)read;
    return error;
}

int pw_allocator_thread_counters(unsigned long long *allocated, unsigned long long *deallocated) {
    uint64_t in = 0, out = 0;
    size_t size = sizeof in;
    *allocated = 0;
    *deallocated = 0;
    int error = mallctl("thread.allocated", &in, &size, NULL, 0);
    if (error != 0) return error;
    size = sizeof out;
    error = mallctl("thread.deallocated", &out, &size, NULL, 0);
    if (error != 0) return error;
    *allocated = in;
    *deallocated = out;
    return 0;
}
