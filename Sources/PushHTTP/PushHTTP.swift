/// PushHTTP: the pooled libcurl-multi HTTP/2 client.
public enum PushHTTPModule {}
