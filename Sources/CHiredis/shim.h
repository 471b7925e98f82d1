#ifndef PW_CHIREDIS_SHIM_H
#define PW_CHIREDIS_SHIM_H
#include <hiredis/hiredis.h>
/* Typed wrappers, prefixed pw_redis_. Use redisCommandArgv / redisAppendCommandArgv, never the variadic forms. */
#endif
