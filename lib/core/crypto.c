/*
 * crypto.c - binding libcrypto at run time (see crypto.h for why).
 */
#define LAKE_CRYPTO_IMPL 1
#include "core/crypto.h"

#include "core/dlib.h"

static lakeCryptoApi api;
static lakeDlib lib = LAKE_DLIB_INIT("libcrypto.so.3", "OpenSSL 3");
static pthread_once_t once = PTHREAD_ONCE_INIT;

void *lakeCryptoHandle(void) {
    return lakeDlibOpen(&lib);
}

#define SLOT(f) LAKE_DLIB_SLOT(api, f)
static void bindAll(void) {
    static const char *const names[] = {LAKE_CRYPTO_FUNCS(LAKE_DLIB_NAME)};
    void **const slots[] = {LAKE_CRYPTO_FUNCS(SLOT)};
    lakeDlibBind(&lib, sizeof names / sizeof names[0], names, slots);
}

const lakeCryptoApi *lakeCryptoLoad(void) {
    pthread_once(&once, bindAll);
    return &api;
}
