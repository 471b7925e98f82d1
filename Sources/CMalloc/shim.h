#ifndef PW_CMALLOC_SHIM_H
#define PW_CMALLOC_SHIM_H
#include <malloc.h>
/* glibc allocator tuning (malloc.h is not part of Swift's Glibc module), prefixed pw_malloc_. */
/* Allocations of at least `bytes` are mmap'd and returned to the kernel on free; setting the
   threshold also stops glibc from raising it after large blocks are freed. 1 on success. */
static inline int pw_malloc_set_mmap_threshold(int bytes) { return mallopt(M_MMAP_THRESHOLD, bytes); }
/* Gives free memory of every arena back to the kernel (glibc >= 2.8). 1 if any was released. */
static inline int pw_malloc_trim(void) { return malloc_trim(0); }
#endif
