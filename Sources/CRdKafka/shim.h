#ifndef PW_CRDKAFKA_SHIM_H
#define PW_CRDKAFKA_SHIM_H
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
/* librdkafka's headers import cleanly: nothing to wrap. Its C glue (rd_kafka_produceva's
 * argument list) is the CPushKafka target's. */
#endif
