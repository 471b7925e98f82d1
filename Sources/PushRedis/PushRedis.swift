/// PushRedis: hiredis adapter, pipelined per batch.
public enum PushRedisModule {}
