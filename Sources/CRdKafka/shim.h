#ifndef PW_CRDKAFKA_SHIM_H
#define PW_CRDKAFKA_SHIM_H
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
/* Typed wrappers for what Swift cannot call go here, prefixed pw_rdk_. */
#endif
