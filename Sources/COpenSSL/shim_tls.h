#ifndef PW_COPENSSL_SHIM_TLS_H
#define PW_COPENSSL_SHIM_TLS_H
/* TLS-server wrappers used by the sandbox (PushSandbox), prefixed pw_tls_. */
#include <openssl/ssl.h>
#include <openssl/x509.h>
#endif
