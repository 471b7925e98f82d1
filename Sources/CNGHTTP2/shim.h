#ifndef PW_CNGHTTP2_SHIM_H
#define PW_CNGHTTP2_SHIM_H
#include <nghttp2/nghttp2.h>
/* Typed wrappers, prefixed pw_ng_. */
#endif
