#ifndef PW_CPUSHKAFKA_H
#define PW_CPUSHKAFKA_H
/* The librdkafka glue of PushKafka, prefixed pw_rdk_. */
#include <stddef.h>
#include <stdint.h>
#include <librdkafka/rdkafka.h>

/* rd_kafka_produceva with the fields PushKafka uses. Swift cannot build the anonymous union of
 * rd_kafka_vu_t conveniently, and rd_kafka_producev is variadic.
 * key may be NULL (no key). headers may be NULL; on success librdkafka owns them, on failure the
 * caller still does (rd_kafka_produceva contract). Key and value are copied (RD_KAFKA_MSG_F_COPY).
 * partition: RD_KAFKA_PARTITION_UA (-1) lets the partitioner choose from the key. Returns NULL
 * when the message was queued, else the error (the caller destroys it). */
rd_kafka_error_t *pw_rdk_produce(rd_kafka_t *rk, const char *topic, int32_t partition,
                                 const void *key, size_t key_len,
                                 const void *value, size_t value_len,
                                 rd_kafka_headers_t *headers, void *opaque);
#endif
