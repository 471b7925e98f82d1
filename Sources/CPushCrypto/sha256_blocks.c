/* SHA-256 block compression through libcrypto (see CPushCrypto.h). */
/* SHA256_Transform is deprecated in OpenSSL 3.0 (the EVP interface replaces it), but it is the one
 * public entry to libcrypto's CPU-dispatched block function, and EVP_Digest* cannot resume from a
 * given chaining state (HMAC's precomputed inner/outer states). */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include "CPushCrypto.h"

#include <string.h>
#include <openssl/sha.h>

void pw_crypto_sha256_blocks(uint32_t state[8], const unsigned char *blocks, size_t block_count) {
    SHA256_CTX context;
    memcpy(context.h, state, sizeof(context.h));
    for (size_t index = 0; index < block_count; index++) SHA256_Transform(&context, blocks + index * 64);
    memcpy(state, context.h, sizeof(context.h));
}
