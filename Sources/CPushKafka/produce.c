#include "CPushKafka.h"

rd_kafka_error_t *pw_rdk_produce(rd_kafka_t *rk, const char *topic, int32_t partition,
                                 const void *key, size_t key_len,
                                 const void *value, size_t value_len,
                                 rd_kafka_headers_t *headers, void *opaque) {
        rd_kafka_vu_t vus[7];
        size_t n = 0;
        vus[n].vtype = RD_KAFKA_VTYPE_TOPIC;
        vus[n].u.cstr = topic;
        n++;
        if (partition != RD_KAFKA_PARTITION_UA) {
                vus[n].vtype = RD_KAFKA_VTYPE_PARTITION;
                vus[n].u.i32 = partition;
                n++;
        }
        if (key) {
                vus[n].vtype = RD_KAFKA_VTYPE_KEY;
                vus[n].u.mem.ptr = (void *)key;
                vus[n].u.mem.size = key_len;
                n++;
        }
        vus[n].vtype = RD_KAFKA_VTYPE_VALUE;
        vus[n].u.mem.ptr = (void *)value;
        vus[n].u.mem.size = value_len;
        n++;
        if (headers) {
                vus[n].vtype = RD_KAFKA_VTYPE_HEADERS;
                vus[n].u.headers = headers;
                n++;
        }
        vus[n].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
        vus[n].u.i = RD_KAFKA_MSG_F_COPY;
        n++;
        vus[n].vtype = RD_KAFKA_VTYPE_OPAQUE;
        vus[n].u.ptr = opaque;
        n++;
        return rd_kafka_produceva(rk, vus, n);
}
